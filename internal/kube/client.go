// Package kube is cnibench's only way into a cluster, local or remote: it connects through a
// kubeconfig, checks permissions, places client and server pods on nodes, executes tools in
// them, reads the environment fingerprint, and removes everything it created.
package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	nadclient "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/client/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"
)

// Client talks to one cluster.
type Client struct {
	CS kubernetes.Interface
	// NADs reads NetworkAttachmentDefinitions, the secondary paths' networks.
	NADs   nadclient.Interface
	config *rest.Config
	// Server is the API server's URL, for messages.
	Server string
	// Context is the kubeconfig context the client uses (the current one unless one was
	// named); empty for a kubeconfig without contexts.
	Context string

	// lost is when, and how, an exec last lost its connection to the API server, and how many
	// times one did.
	lostMu    sync.Mutex
	lostAt    time.Time
	lostWhat  string
	lostCount int
}

// NoteLostConnection records that an exec's connection to the API server broke: ExecIO does
// for an error that says so (Unreachable), and a caller whose command always prints should
// when it got nothing back, which is how client-go reports a stream cut short: as success.
func (c *Client) NoteLostConnection(what string) {
	c.lostMu.Lock()
	defer c.lostMu.Unlock()
	c.lostAt, c.lostWhat = time.Now(), what
	c.lostCount++
}

// LostConnections says how many times the client noted a lost connection (NoteLostConnection)
// and how the last one was lost.
func (c *Client) LostConnections() (n int, last string) {
	c.lostMu.Lock()
	defer c.lostMu.Unlock()
	return c.lostCount, c.lostWhat
}

// LostConnectionSince says how an exec last lost its connection to the API server, if it did
// after t; "" otherwise. An attempt that timed out after the server came back may have lost
// its way to it first.
func (c *Client) LostConnectionSince(t time.Time) string {
	c.lostMu.Lock()
	defer c.lostMu.Unlock()
	if c.lostAt.Before(t) {
		return ""
	}
	return c.lostWhat
}

// CurrentContext is the current context of the kubeconfig kubectl would read (KUBECONFIG, else
// ~/.kube/config), or an error saying there is none.
func CurrentContext() (string, error) {
	raw, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(clientcmd.NewDefaultClientConfigLoadingRules(), &clientcmd.ConfigOverrides{}).RawConfig()
	if err != nil {
		return "", fmt.Errorf("read the kubeconfig (KUBECONFIG or ~/.kube/config): %w", err)
	}
	if raw.CurrentContext == "" {
		return "", errors.New("the kubeconfig (KUBECONFIG or ~/.kube/config) has no current context: name a cluster with --context or --kubeconfig, or --cluster for a local cluster")
	}
	return raw.CurrentContext, nil
}

// Connect loads a kubeconfig (empty path: the usual KUBECONFIG / ~/.kube/config rules) with an
// optional context.
func Connect(kubeconfig, kubeContext string) (*Client, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext})
	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %q (context %q): %w", kubeconfig, kubeContext, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	// A partitioned API server fails the calls waiting on it within userTimeout.
	cfg.Dial = apiDialer().DialContext
	c := &Client{config: cfg, Server: cfg.Host}
	cfg.WrapTransport = c.watchAnswers
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", cfg.Host, err)
	}
	nads, err := nadclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("NetworkAttachmentDefinition client for %s: %w", cfg.Host, err)
	}
	used := kubeContext
	if raw, err := loader.RawConfig(); err == nil && used == "" {
		used = raw.CurrentContext
	}
	c.CS, c.NADs, c.Context = cs, nads, used
	return c, nil
}

// Preflight fails with one clear error when the API server cannot be reached or the
// credentials lack a permission the run needs (Access.Rules: what `cnibench rbac` grants).
func (c *Client) Preflight(ctx context.Context, a Access) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := c.CS.Discovery().RESTClient().Get().AbsPath("/version").DoRaw(ctx); err != nil {
		return fmt.Errorf("cannot reach the API server at %s: %w", c.Server, err)
	}
	missing, err := c.missing(ctx, a)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		rbac := "cnibench rbac"
		if a.SecondaryNetwork != "" {
			rbac += " --secondary-network " + a.SecondaryNetwork
		}
		return fmt.Errorf("missing RBAC permissions on %s (namespace %s): %s (%s prints the objects that grant a run's permissions)",
			c.Server, a.Namespace, strings.Join(missing, ", "), rbac)
	}
	return nil
}

// ExecError is a command that ran in a container and exited non-zero.
type ExecError struct {
	Pod, Container string
	Argv           []string
	Stderr         string
	Err            error
}

func (e *ExecError) Error() string {
	return fmt.Sprintf("exec %q in %s/%s: %v: %s", strings.Join(e.Argv, " "), e.Pod, e.Container, e.Err, strings.TrimSpace(e.Stderr))
}

func (e *ExecError) Unwrap() error { return e.Err }

// Exec runs argv in a container and returns its stdout.
func (c *Client) Exec(ctx context.Context, namespace, pod, container string, argv []string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	err := c.ExecIO(ctx, namespace, pod, container, argv, nil, &stdout, &stderr)
	if err != nil {
		return stdout.Bytes(), &ExecError{Pod: pod, Container: container, Argv: argv, Stderr: stderr.String(), Err: err}
	}
	return stdout.Bytes(), nil
}

// ExecIO runs argv in a container with the given streams (stdin may be nil) and returns when
// it exits; the error does not wrap stderr, which the caller has.
func (c *Client) ExecIO(ctx context.Context, namespace, pod, container string, argv []string, stdin io.Reader, stdout, stderr io.Writer) error {
	req := c.CS.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: argv, Stdin: stdin != nil, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	exec, err := spdyExecutor(c.config, req.URL())
	if err != nil {
		return fmt.Errorf("exec in %s/%s: %w", pod, container, err)
	}
	err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr})
	if Unreachable(err) {
		c.NoteLostConnection(fmt.Sprintf("an exec in %s/%s: %v", pod, container, err))
	}
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
			err = fmt.Errorf("%w (%v)", ctxErr, err)
		}
		return err
	}
	return nil
}

// CheckRuntimeClass fails with one error naming the cluster's RuntimeClasses when name is not
// one of them; "" (the cluster's default handler) always passes.
func (c *Client) CheckRuntimeClass(ctx context.Context, name string) error {
	if name == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	list, err := c.CS.NodeV1().RuntimeClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list RuntimeClasses: %w", err)
	}
	var names []string
	for _, rc := range list.Items {
		if rc.Name == name {
			return nil
		}
		names = append(names, rc.Name)
	}
	if len(names) == 0 {
		return fmt.Errorf("runtime %s: the cluster has no RuntimeClass at all", name)
	}
	return fmt.Errorf("runtime %s: the cluster has no RuntimeClass of that name (it has %s)", name, strings.Join(names, ", "))
}
