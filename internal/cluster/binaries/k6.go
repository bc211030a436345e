package binaries

import "time"

// K6Version is the k6 load generator release built from the Go module proxy.
const K6Version = "v1.8.1"

// K6 is the component holding the k6 load generator, used to drive HTTP through a cluster's
// ingress.
const K6 = "k6"

// K6Binary is k6's binary name (its module's root package).
const K6Binary = "k6"

// k6Components are the binaries of the k6 load generator, built by `setup --all`, or on
// first use by a cluster that asks for the Gateway API split; Base leaves it out.
func k6Components() []Component {
	c := Component{
		Name:    K6,
		Module:  "go.k6.io/k6",
		Version: K6Version,
		// Measured on the 2-core target: 1 min 33 s right after Traefik in the same fresh build
		// cache (they share grpc, protobuf, OpenTelemetry, x/net); ~3 min on its own.
		ColdBuild: 3 * time.Minute,
		// No replace directives: go install works. The version is a constant in the sources
		// (internal/build), so there is nothing to stamp.
		recipe:   goInstallRecipe(),
		ldflags:  "-s -w",
		packages: []string{"go.k6.io/k6"},
		verify: verifySpec{
			binary: K6Binary,
			args:   []string{"version"},
			want:   K6Version,
		},
	}
	c.Binaries = binaryNames(c.packages)
	return []Component{c}
}
