package binaries

import (
	"strings"
	"testing"
)

// TestCrossReadySaysWhatIsMissing checks which components can be built for another
// architecture and that a refusal names the component and what it lacks.
func TestCrossReadySaysWhatIsMissing(t *testing.T) {
	k6, err := Lookup(K6)
	if err != nil {
		t.Fatal(err)
	}
	if err := CrossReady(k6, "arm64"); err != nil {
		t.Errorf("k6 (a Go program) for arm64: %v", err)
	}
	stream, err := Lookup(Stream)
	if err != nil {
		t.Fatal(err)
	}
	if err := CrossReady(stream, "riscv64"); err == nil || !strings.Contains(err.Error(), "no Rust target for riscv64") {
		t.Errorf("STREAM for riscv64: %v, want no Rust target", err)
	}
	t.Setenv("PATH", t.TempDir()) // neither the cross linker nor rustup
	t.Setenv("HOME", t.TempDir())
	if err := CrossReady(stream, "arm64"); err == nil || !strings.Contains(err.Error(), "aarch64-linux-gnu-gcc") {
		t.Errorf("STREAM for arm64 without a cross linker: %v, want the linker named", err)
	}
	runc := Component{Name: "runc", recipe: recipe{name: "kind-1"}}
	if err := CrossReady(runc, "arm64"); err == nil || !strings.Contains(err.Error(), "runc is neither a Go program nor a crate") {
		t.Errorf("a component of another recipe: %v", err)
	}
}
