package monitor

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
)

const (
	// atClkTck is the auxiliary vector entry the kernel sets to USER_HZ, the unit of
	// /proc/stat; it is what sysconf(_SC_CLK_TCK) returns in C.
	atClkTck = 17
	// defaultUserHZ is USER_HZ on every architecture Kubernetes runs on (x86, arm64, ppc64le,
	// s390x): the kernel keeps it at 100 whatever its internal tick rate.
	defaultUserHZ = 100
)

// clockTicks returns USER_HZ from procRoot/self/auxv, or defaultUserHZ when the file is
// missing or has no AT_CLKTCK (fixture trees, or a /proc that hides it).
func clockTicks(procRoot string) float64 {
	b, err := os.ReadFile(filepath.Join(procRoot, "self/auxv"))
	if err != nil {
		return defaultUserHZ
	}
	if hz, ok := parseAuxv(b, atClkTck); ok && hz > 0 {
		return float64(hz)
	}
	return defaultUserHZ
}

// parseAuxv finds key in an auxiliary vector: pairs of native words, ended by AT_NULL (0).
func parseAuxv(b []byte, key uint64) (uint64, bool) {
	word := strconv.IntSize / 8
	read := func(p []byte) uint64 {
		if word == 4 {
			return uint64(binary.NativeEndian.Uint32(p))
		}
		return binary.NativeEndian.Uint64(p)
	}
	for i := 0; i+2*word <= len(b); i += 2 * word {
		k, v := read(b[i:]), read(b[i+word:])
		if k == 0 {
			break
		}
		if k == key {
			return v, true
		}
	}
	return 0, false
}
