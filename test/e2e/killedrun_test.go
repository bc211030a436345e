//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestKilledRunShownInterrupted kills a run with SIGKILL while it waits on an API server that
// never answers: the store keeps it "running", so the list must still show it as
// interrupted, and the next run on the same store must mark it so for good.
func TestKilledRunShownInterrupted(t *testing.T) {
	// An API server that accepts connections and never answers keeps the run in progress.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://%s"}}]
users: [{name: u, user: {}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, ln.Addr())
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "results.db")
	s := startCLI(t, "run", "--kubeconfig", kubeconfig, "--image", "tools:1", "--store", db)
	if !s.waitLine(t, "] run ", time.Minute) {
		t.Fatalf("run ended before it started:\n%s", s.output())
	}
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = s.wait(t, time.Minute)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := cli(ctx, "results", "list", "--store", db)
	if err != nil || !strings.Contains(out, " interrupted ") {
		t.Fatalf("results list after SIGKILL (err %v) does not show the run as interrupted:\n%s", err, out)
	}
	// The next run marks it: it needs no live API server for that, and fails fast without one.
	ln.Close()
	out, _ = cli(ctx, "run", "--kubeconfig", kubeconfig, "--image", "tools:1", "--store", db)
	if !strings.Contains(out, "was interrupted (interrupted: its process (pid ") {
		t.Errorf("the next run did not report the killed one:\n%s", out)
	}
	out, err = cli(ctx, "results", "list", "--store", db, "-o", "json")
	if err != nil || strings.Count(out, `"status": "interrupted"`) != 1 || !strings.Contains(out, "ended without finishing the run") {
		t.Errorf("results list after the next run (err %v):\n%s", err, out)
	}
}
