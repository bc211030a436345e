package external

import (
	"errors"
	"net"
	"testing"
	"time"
)

// TestConnectionsOpenAreBounded holds two connections to a listener bounded at two: the third
// is accepted only once one of them closed, and closing the listener ends an Accept waiting
// for a slot.
func TestConnectionsOpenAreBounded(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := newLimitListener(inner, 2)
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	for range 3 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	first, second := <-accepted, <-accepted
	select {
	case <-accepted:
		t.Fatal("a third connection accepted while two are open, at most 2")
	case <-time.After(200 * time.Millisecond):
	}
	first.Close()
	first.Close()
	select {
	case <-accepted:
	case <-time.After(5 * time.Second):
		t.Fatal("the third connection not accepted after one of two closed")
	}
	defer second.Close()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case _, open := <-accepted:
		if open {
			t.Error("accepted a connection after the listener closed")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Accept still waiting after the listener closed")
	}
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept on a closed listener: %v", err)
	}
}
