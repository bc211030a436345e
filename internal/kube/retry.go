package kube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
)

// Unreachable tells whether an error says the API server could not be reached, or its
// connection broke: refused, reset, timed out, closed under the client. Such an error says
// nothing about what was asked, which may succeed once the server answers again. A context
// that ended is the caller's doing, not the server's: not unreachable.
func Unreachable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var opErr *net.OpError
	return errors.As(err, &opErr) || utilnet.IsTimeout(err) || utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) ||
		utilnet.IsProbableEOF(err) || utilnet.IsHTTP2ConnectionLost(err) || errors.Is(err, syscall.ETIMEDOUT) ||
		errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH)
}

// Retryable tells whether an API call that failed with err may succeed if made again: the
// server unreachable (Unreachable), or answering that it is busy, throttling the client or not
// ready yet, rather than refusing the request itself. A refusal (not found, forbidden,
// invalid, a conflict) is not retried: the same request gets the same answer.
func Retryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServiceUnavailable(err) || Unreachable(err)
}

// apiBackoff spaces the tries of an API call that failed for a reason that passes: 0.5 s
// doubling to 8 s, seven tries over about 30 s, which a restarting API server or a short
// network outage fits in.
var apiBackoff = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 7, Cap: 8 * time.Second}

// retryAPI makes an idempotent API call (a delete, a get, a list) until it succeeds, fails for
// a reason that does not pass (Retryable), ctx ends or the backoff's tries run out; it returns
// the last error.
func retryAPI(ctx context.Context, fn func() error) error {
	return retry.OnError(apiBackoff, func(err error) bool { return ctx.Err() == nil && Retryable(err) }, fn)
}

// readyzTimeout bounds one probe of the API server's /readyz.
const readyzTimeout = 5 * time.Second

// AwaitAPI waits up to limit for the API server to answer /readyz and returns how long it
// waited: 0 when its first probe answered. It fails when limit passed without an answer,
// naming the last error, or when ctx ended.
func (c *Client) AwaitAPI(ctx context.Context, limit time.Duration) (time.Duration, error) {
	began := time.Now()
	var lastErr error
	probes := 0
	err := wait.PollUntilContextTimeout(ctx, time.Second, limit, true, func(ctx context.Context) (bool, error) {
		probes++
		rctx, cancel := context.WithTimeout(ctx, readyzTimeout)
		defer cancel()
		_, lastErr = c.CS.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(rctx)
		return lastErr == nil, nil
	})
	waited := time.Since(began)
	switch {
	case err == nil && probes == 1:
		return 0, nil
	case err == nil:
		return waited, nil
	case ctx.Err() != nil:
		return waited, ctx.Err()
	case lastErr == nil:
		lastErr = err
	}
	return waited, fmt.Errorf("the API server at %s did not answer for %s: %w", c.Server, limit.Round(time.Second), lastErr)
}
