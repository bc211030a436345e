package testsupport

import (
	"os"
	"os/exec"
	"testing"
)

// Chromium returns the path of Debian's chromium, for the tests that render pages in a real
// browser. A missing browser fails the test when running as root, as CI does after installing
// it with scripts/setup.sh, and skips it otherwise.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Geteuid() == 0 {
		t.Fatal("chromium not found: scripts/setup.sh installs it (apt-get install chromium)")
	}
	t.Skip("chromium not found (not root: skipping; CI runs this test as root with chromium installed)")
	return ""
}
