package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// serveError runs `cnibench serve` with args and returns its error, as the command line
// prints it.
func serveError(t *testing.T, args ...string) error {
	t.Helper()
	root := newRootCommand()
	root.SetArgs(append([]string{"serve"}, args...))
	root.SetOut(new(strings.Builder))
	root.SetErr(new(strings.Builder))
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a command that got as far as serving returns at once
	return executeCommand(ctx, root)
}

// TestServeRefusesSettings: an address that is not loopback without a token, a file that is no
// store and half a TLS pair are refused by the flags that set them, before anything listens; a
// store that does not exist yet is served (empty until the first run makes it), never created.
func TestServeRefusesSettings(t *testing.T) {
	dir := t.TempDir()
	missing, junk := filepath.Join(dir, "none.db"), filepath.Join(dir, "junk.db")
	if err := os.WriteFile(junk, []byte("not a database"), 0o600); err != nil {
		t.Fatal(err)
	}
	for args, want := range map[string]string{
		"--listen 0.0.0.0:0 --store " + missing: "--token-file: required to listen on 0.0.0.0:0",
		"--listen :0 --store " + missing:        "--token-file: required",
		"--listen 127.0.0.1:0 --store " + junk:  "--store: ",
		"--tls-cert c.pem --store " + missing:   "tls-key",
		"--listen nonsense --store " + missing:  "--listen nonsense:",
	} {
		err := serveError(t, strings.Fields(args)...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("serve %s: %v, want %q", args, err, want)
		}
	}
	if err := serveError(t, "--listen", "127.0.0.1:0", "--store", missing); err != nil {
		t.Errorf("serve of a store that does not exist yet: %v", err)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("serve created the store it was given: %v", err)
	}
	token := filepath.Join(dir, "token")
	err := serveError(t, "--listen", "0.0.0.0:0", "--token-file", token, "--store", junk)
	if err == nil || !strings.Contains(err.Error(), "--store") {
		t.Errorf("with a token file: %v, want the store refused", err)
	}
	if b, err := os.ReadFile(token); err != nil || len(strings.TrimSpace(string(b))) != 64 {
		t.Errorf("token file: %q, %v; want a new token", b, err)
	}
}
