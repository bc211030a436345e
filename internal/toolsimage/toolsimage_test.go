package toolsimage

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func TestProgressByQuarters(t *testing.T) {
	updates := make(chan v1.Update, 8)
	for _, done := range []int64{10, 30, 30, 80, 99} {
		updates <- v1.Update{Total: 100, Complete: done}
	}
	close(updates)
	var out bytes.Buffer
	if total := reportProgress(&out, updates); total != 100 {
		t.Errorf("total %d", total)
	}
	if got := out.String(); got != "pushed 25 % of 0.0 MB\npushed 50 % of 0.0 MB\npushed 75 % of 0.0 MB\n" {
		t.Errorf("progress:\n%s", got)
	}
}

func TestCAFileMustHoldCertificates(t *testing.T) {
	if _, err := transportWith(filepath.Join(t.TempDir(), "none.pem")); err == nil || !strings.Contains(err.Error(), "CA file") {
		t.Errorf("missing CA file: %v", err)
	}
	junk := filepath.Join(t.TempDir(), "junk.pem")
	_ = os.WriteFile(junk, []byte("not a certificate"), 0o600)
	if _, err := transportWith(junk); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("a file without certificates: %v", err)
	}
	if _, err := transportWith(""); err != nil {
		t.Errorf("no CA file: %v", err)
	}
}
