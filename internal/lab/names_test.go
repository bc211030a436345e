package lab

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// TestIsObjectName holds IsObjectName to the API server's own check.
func TestIsObjectName(t *testing.T) {
	label63 := strings.Repeat("a", 63)
	names := []string{"runc", "crun", "runsc", "kata-qemu", "gvisor.example.com", "a", "0", "a-b.c-d",
		"", "-a", "a-", "A", "run_c", "run c", "a..b", ".a", "a.", "é", "a.-b",
		strings.Repeat(label63+".", 3) + strings.Repeat("a", 61), // 253 characters
		strings.Repeat(label63+".", 3) + strings.Repeat("a", 62), // 254
		strings.Repeat("a", 64)}
	for _, name := range names {
		want := len(validation.IsDNS1123Subdomain(name)) == 0
		if got := IsObjectName(name); got != want {
			t.Errorf("IsObjectName(%q) = %v, want %v (Kubernetes' IsDNS1123Subdomain)", name, got, want)
		}
	}
}
