package main

import (
	"io"
	"os"
	"testing"

	"k8s.io/klog/v2"
)

// TestQuietKlog checks that client-go's error reports through klog neither reach stderr nor
// create klog's default log files.
func TestQuietKlog(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	quietKlog()
	klog.ErrorS(io.ErrClosedPipe, "Unhandled Error")
	klog.Warning("client-side throttling")
	klog.Flush()
	os.Stderr = stderr
	w.Close()
	out, _ := io.ReadAll(r)
	if len(out) > 0 {
		t.Errorf("klog wrote to stderr: %q", out)
	}
	if files, _ := os.ReadDir(dir); len(files) > 0 {
		t.Errorf("klog created %v", files)
	}
}
