package binaries

import "time"

// RegistryVersion is the release of the distribution registry (the CNCF's reference OCI
// registry) built from the Go module proxy, for the tests that push the tools image to a real
// registry with TLS and authentication.
const RegistryVersion = "v3.1.2"

// Registry is the component holding the registry, and RegistryBinary its binary.
const (
	Registry       = "registry"
	RegistryBinary = "registry"
)

// registryComponents are the registry's binaries, built by `setup --all` (the tests' setup);
// no cluster needs it, so Base leaves it out.
func registryComponents() []Component {
	c := Component{
		Name:    Registry,
		Module:  "github.com/distribution/distribution/v3",
		Version: RegistryVersion,
		// No replace directives: go install works.
		ColdBuild: 2 * time.Minute,
		recipe:    goInstallRecipe(),
		ldflags:   "-s -w",
		packages:  []string{"github.com/distribution/distribution/v3/cmd/registry"},
		verify: verifySpec{
			binary: RegistryBinary,
			args:   []string{"--help"},
			want:   "serve",
		},
	}
	c.Binaries = binaryNames(c.packages)
	return []Component{c}
}
