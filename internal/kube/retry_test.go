package kube

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
)

var podsResource = schema.GroupResource{Resource: "pods"}

// TestRetryableSortsPassingFromRefused holds the classification every retry of the run relies
// on: what an absent, busy or throttling API server answers is tried again, what a server
// says of the request itself is not, and neither is the caller's own ending.
func TestRetryableSortsPassingFromRefused(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	read := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ETIMEDOUT)}
	for _, c := range []struct {
		name             string
		err              error
		retry, unreached bool
	}{
		{"nil", nil, false, false},
		{"server timeout", apierrors.NewServerTimeout(podsResource, "list", 1), true, false},
		{"request timeout", apierrors.NewTimeoutError("slow etcd", 1), true, false},
		{"throttled", apierrors.NewTooManyRequests("slow down", 1), true, false},
		{"unavailable", apierrors.NewServiceUnavailable("starting"), true, false},
		{"dial refused", fmt.Errorf("list pods: %w", &url.Error{Op: "Get", URL: "https://10.0.0.1:6443", Err: dial}), true, true},
		{"read timed out", fmt.Errorf("exec: %w", read), true, true},
		{"reset", fmt.Errorf("exec: %w", syscall.ECONNRESET), true, true},
		{"eof", io.ErrUnexpectedEOF, true, true},
		{"http2 lost", errors.New("http2: client connection lost"), true, true},
		{"not found", apierrors.NewNotFound(podsResource, "p"), false, false},
		{"forbidden", apierrors.NewForbidden(podsResource, "p", errors.New("no")), false, false},
		{"conflict", apierrors.NewConflict(podsResource, "p", errors.New("changed")), false, false},
		{"bad certificate", &url.Error{Op: "Get", URL: "https://x", Err: x509.UnknownAuthorityError{}}, false, false},
		{"cancelled", fmt.Errorf("list: %w", context.Canceled), false, false},
		{"caller's deadline", fmt.Errorf("exec: %w", context.DeadlineExceeded), false, false},
		{"tool exit", errors.New("command terminated with exit code 1"), false, false},
	} {
		if got := Retryable(c.err); got != c.retry {
			t.Errorf("%s: Retryable(%v) = %v, want %v", c.name, c.err, got, c.retry)
		}
		if got := Unreachable(c.err); got != c.unreached {
			t.Errorf("%s: Unreachable(%v) = %v, want %v", c.name, c.err, got, c.unreached)
		}
	}
}

// TestRetryAPITriesAgainOnlyWhatPasses drives retryAPI through client-go's fake clientset: a
// delete the server refuses twice as busy succeeds on the third try; one it answers with not
// found is made once; a cancelled context stops the tries.
func TestRetryAPITriesAgainOnlyWhatPasses(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewSimpleClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}})
	var calls atomic.Int32
	cs.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if calls.Add(1) <= 2 {
			return true, nil, apierrors.NewTooManyRequests("busy", 0)
		}
		return false, nil, nil
	})
	del := func(ctx context.Context, name string) error {
		return retryAPI(ctx, func() error { return cs.CoreV1().Pods("ns").Delete(ctx, name, metav1.DeleteOptions{}) })
	}
	if err := del(ctx, "p"); err != nil || calls.Load() != 3 {
		t.Errorf("busy twice: %v after %d calls, want success on the third", err, calls.Load())
	}
	calls.Store(2)
	if err := del(ctx, "p"); !apierrors.IsNotFound(err) || calls.Load() != 3 {
		t.Errorf("gone: %v after %d calls, want not found at once", err, calls.Load()-2)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	calls.Store(0)
	if err := del(cctx, "p"); err == nil || calls.Load() != 1 {
		t.Errorf("cancelled: %v after %d calls, want one call", err, calls.Load())
	}
}

// TestAwaitAPI probes a server that answers /readyz at once, after a while, and never.
func TestAwaitAPI(t *testing.T) {
	var failures atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" && failures.Add(-1) < 0 {
			_, _ = io.WriteString(w, "ok")
			return
		}
		http.Error(w, "not ready", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	c := &Client{CS: cs, Server: srv.URL}
	ctx := context.Background()
	if waited, err := c.AwaitAPI(ctx, 5*time.Second); err != nil || waited != 0 {
		t.Errorf("answering: waited %s, %v; want 0", waited, err)
	}
	failures.Store(2)
	if waited, err := c.AwaitAPI(ctx, 10*time.Second); err != nil || waited < 2*time.Second || waited > 5*time.Second {
		t.Errorf("two refusals: waited %s, %v; want about two 1-s polls", waited, err)
	}
	failures.Store(1000)
	_, err = c.AwaitAPI(ctx, 2*time.Second)
	if err == nil || !strings.Contains(err.Error(), "did not answer for 2s") || !strings.Contains(err.Error(), srv.URL) {
		t.Errorf("never: %v, want the server named and the wait", err)
	}
}

// TestLostConnectionSince keeps the last lost connection and answers only for an attempt that
// began before it.
func TestLostConnectionSince(t *testing.T) {
	c := &Client{}
	before := time.Now()
	if got := c.LostConnectionSince(before); got != "" {
		t.Errorf("nothing lost yet: %q", got)
	}
	c.NoteLostConnection("an exec in p/c ended without output or exit status")
	if got := c.LostConnectionSince(before); got != "an exec in p/c ended without output or exit status" {
		t.Errorf("lost during the attempt: %q", got)
	}
	if got := c.LostConnectionSince(time.Now().Add(time.Second)); got != "" {
		t.Errorf("lost before the attempt: %q", got)
	}
}
