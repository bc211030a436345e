package agent

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestNameServerAnswersWithItsName(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- RunNameServer(ctx, NameServerOptions{Port: port, Name: "backend-a"}) }()
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/"
	var body string
	for i := 0; i < 100; i++ {
		if body, err = getBody(url); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil || body != "backend-a\n" {
		t.Errorf("GET = %q, %v; want backend-a and a newline", body, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("RunNameServer: %v", err)
	}
	if err := RunNameServer(context.Background(), NameServerOptions{Port: 0}); err == nil || !strings.Contains(err.Error(), "port: 0: expected 1-65535") {
		t.Errorf("port 0: %v", err)
	}
}

// getBody fetches url and returns its body.
func getBody(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
