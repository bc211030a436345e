package binaries

import (
	"bufio"
	"fmt"
	"path"
	"sort"
	"strings"
)

// wrapperModuleName and wrapperGoVersion must stay as they are: the go build
// cache on the target machine was warmed with exactly this wrapper module, and
// identical inputs let a rebuild reuse it.
const (
	wrapperModuleName = "cnibench.local/k8sbuild"
	wrapperGoVersion  = "1.24.0"
	stagingPrefix     = "./staging/"
)

// parseStagingModules returns the modules that k8s.io/kubernetes' go.mod
// replaces with its own staging directories, e.g.
// "k8s.io/api => ./staging/src/k8s.io/api". Those replace directives are why
// `go install k8s.io/kubernetes/cmd/...@v` fails; a wrapper module has to
// repeat them, pointing at the published staging module versions instead.
func parseStagingModules(gomod string) ([]string, error) {
	seen := map[string]bool{}
	inBlock := false
	sc := bufio.NewScanner(strings.NewReader(gomod))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if i := strings.Index(line, "//"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		switch {
		case line == "":
			continue
		case inBlock && line == ")":
			inBlock = false
			continue
		case line == "replace (":
			inBlock = true
			continue
		case strings.HasPrefix(line, "replace "):
			line = strings.TrimSpace(strings.TrimPrefix(line, "replace "))
		case !inBlock:
			continue
		}
		left, right, ok := strings.Cut(line, "=>")
		if !ok {
			continue
		}
		right = strings.TrimSpace(right)
		if !strings.HasPrefix(right, stagingPrefix) {
			continue
		}
		// The left side may carry a version ("mod v1.2.3 => ..."); only the
		// path matters for the wrapper.
		fields := strings.Fields(left)
		if len(fields) == 0 {
			continue
		}
		seen[fields[0]] = true
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read kubernetes go.mod: %w", err)
	}
	if len(seen) == 0 {
		return nil, fmt.Errorf("kubernetes go.mod replaces no module with %s directories; the wrapper recipe does not fit this version", stagingPrefix)
	}
	mods := make([]string, 0, len(seen))
	for m := range seen {
		mods = append(mods, m)
	}
	sort.Strings(mods)
	return mods, nil
}

// stagingVersion maps a Kubernetes release to the version its staging
// modules are published under: v1.34.2 -> v0.34.2.
func stagingVersion(k8sVersion string) (string, error) {
	rest, ok := strings.CutPrefix(k8sVersion, "v1.")
	if !ok || rest == "" {
		return "", fmt.Errorf("kubernetes version %q: want v1.MINOR.PATCH", k8sVersion)
	}
	return "v0." + rest, nil
}

// wrapperGoMod is the wrapper module's go.mod before `go mod tidy`.
func wrapperGoMod(k8sVersion string, staging []string) (string, error) {
	sv, err := stagingVersion(k8sVersion)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "module %s\n\ngo %s\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n", wrapperModuleName, wrapperGoVersion, k8sVersion)
	for _, m := range staging {
		fmt.Fprintf(&b, "\t%s => %s %s\n", m, m, sv)
	}
	b.WriteString(")\n")
	return b.String(), nil
}

// wrapperToolsGo makes the wrapper module import the commands so that
// `go mod tidy` records their dependencies. The build tag keeps the file out
// of every build; it only exists for tidy.
func wrapperToolsGo(packages []string) string {
	sorted := append([]string(nil), packages...)
	sort.Strings(sorted)
	var b strings.Builder
	b.WriteString("//go:build tools\n\npackage tools\n\nimport (\n")
	for _, p := range sorted {
		fmt.Fprintf(&b, "\t_ %q\n", p)
	}
	b.WriteString(")\n")
	return b.String()
}

// binaryNames maps package paths to the binary names go build gives them.
func binaryNames(packages []string) []string {
	out := make([]string, len(packages))
	for i, p := range packages {
		out[i] = path.Base(p)
	}
	return out
}
