// Package layering holds cnibench's import rules and the test that keeps them: which
// packages may not depend on which, each with its reason (rules_test.go). The rules are data,
// in the manner of Kubernetes' import-boss files, so that a boundary is kept by a failing
// test rather than by a reviewer's memory; adding one is one line. The package has no code
// of its own and nothing imports it.
package layering
