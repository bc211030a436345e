package tuning

import (
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/testsupport/fuzzcheck"
)

// FuzzParse reads tuning profile files (run --tunings PATH): an error names the field or line
// it refused, and an accepted profile validates.
func FuzzParse(f *testing.F) {
	f.Add([]byte("name: big-buffers\nsysctls:\n  net.ipv4.tcp_rmem: 4096 131072 16777216\n  net.core.somaxconn: 4096\noffloads:\n  gro: off\n"))
	f.Add([]byte("name: Bad_Name\nsysctls: {kernel.panic: 1}\n"))
	f.Add([]byte("name: x\nsysctls: {net.ipv4.tcp_congestion_control: ''}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var p Profile
		var err error
		fuzzcheck.Within(t, "tuning Parse", func() { p, err = Parse(data) })
		if err != nil {
			fuzzcheck.Names(t, err, "line ", "field ", "top level", "name: ", "sysctls: ", "offloads: ")
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("Parse accepted a profile that does not validate: %v", err)
		}
		if strings.TrimSpace(p.Name) == "" {
			t.Fatalf("Parse accepted a profile without a name: %+v", p)
		}
	})
}
