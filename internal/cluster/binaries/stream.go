package binaries

import (
	"context"
	"io"
	"time"
)

// StreamVersion is the release of stream-benchmark built from crates.io: John McCalpin's
// STREAM kernels (copy, scale, add, triad) in Rust, counting bytes as STREAM does and reporting
// the best of its iterations in decimal MB/s. Debian ships none: likwid-bench has copy and a
// triad but no scale or add, and stress-ng's stream stressor reports read and write rates.
const StreamVersion = "0.1.1"

// Stream is the component holding the STREAM benchmark, which the tools image carries for the
// stream workload.
const Stream = "stream"

// StreamBinary is the STREAM benchmark's binary name.
const StreamBinary = "stream"

// streamComponents are the binaries of the STREAM benchmark.
func streamComponents() []Component {
	return []Component{{
		Name:    Stream,
		Module:  "crates.io/stream-benchmark",
		Version: StreamVersion,
		// clap and rayon: about a minute on the 2-core target.
		ColdBuild: 2 * time.Minute,
		recipe:    recipe{name: cargoInstallRecipe, build: buildStream},
		// packages feeds the recipe hash.
		packages: []string{"stream-benchmark", "--locked"},
		Binaries: []string{StreamBinary},
		verify: verifySpec{
			binary: StreamBinary,
			args:   []string{"--version"},
			want:   StreamVersion,
		},
	}}
}

// buildStream installs the crate with its default features (rayon: one worker thread per CPU
// unless RAYON_NUM_THREADS says otherwise).
func buildStream(ctx context.Context, c Cache, log io.Writer, comp Component, scratch, out string) error {
	return cargoInstall(ctx, c, log, "stream-benchmark", comp.Version, nil, StreamBinary, scratch, out)
}
