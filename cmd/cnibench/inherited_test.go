package main

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// An inherited descriptor (opened here without close-on-exec, as a parent's would be) is not
// passed on to a child once closeInheritedOnExec has run, and stays usable by cnibench.
func TestCloseInheritedOnExec(t *testing.T) {
	fd, err := syscall.Open(filepath.Join(t.TempDir(), "lock"), syscall.O_CREAT|syscall.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if !childSees(t, fd) {
		t.Fatalf("descriptor %d is not inherited even before: the test cannot tell", fd)
	}
	if err := closeInheritedOnExec(); err != nil {
		t.Fatal(err)
	}
	if childSees(t, fd) {
		t.Errorf("a child still inherits descriptor %d", fd)
	}
	if _, err := syscall.Write(fd, []byte("x")); err != nil {
		t.Errorf("cnibench can no longer use descriptor %d: %v", fd, err)
	}
}

// childSees reports whether a child process has descriptor fd open.
func childSees(t *testing.T, fd int) bool {
	t.Helper()
	out, err := exec.Command("ls", "/proc/self/fd").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Fields(string(out)) {
		if f == strconv.Itoa(fd) {
			return true
		}
	}
	return false
}
