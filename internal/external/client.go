package external

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/setting"
)

// Agent is how a client reaches an external agent: its control address (host:port), the
// token it was started with and, when it serves TLS, the PEM certificate of the CA that signed
// its certificate (the only CA trusted).
type Agent struct {
	Control string
	Token   string
	CA      []byte
}

// externalClient is the HTTP client of the commands that talk to an external agent: short
// timeouts, never a proxy (the agent is on the lab's own network), and with roots, TLS that
// trusts those alone. Each call makes its own, so a connection kept alive would only sit idle
// on both sides until the agent closed it.
func externalClient(roots *x509.CertPool) *http.Client {
	t := &http.Transport{Proxy: nil, DisableKeepAlives: true}
	if roots != nil {
		t.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: t}
}

// client is the HTTP client that reaches a, and the URL scheme it speaks.
func (a Agent) client() (*http.Client, string, error) {
	if len(a.CA) == 0 {
		return externalClient(nil), "http", nil
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(a.CA) {
		return nil, "", &setting.Error{Name: "ca-cert", Want: "expected a PEM certificate of the CA that signed the agent's"}
	}
	return externalClient(roots), "https", nil
}

// call sends an authenticated request to the agent and returns the body of a 200 answer.
func (a Agent) call(ctx context.Context, method, path string, body io.Reader) (string, error) {
	client, scheme, err := a.client()
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, method, scheme+"://"+a.Control+path, body)
	if err != nil {
		return "", &setting.Error{Name: "server", Value: strconv.Quote(a.Control), Err: err}
	}
	req.Header.Set("Authorization", "Bearer "+a.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return do(client, req)
}

// WhoAmI asks the agent which address the connection came from: the source after every SNAT
// on the way.
func (a Agent) WhoAmI(ctx context.Context) (string, error) {
	body, err := a.call(ctx, http.MethodGet, "/whoami", nil)
	if err != nil {
		return "", fmt.Errorf("ask %s for the source address: %w", a.Control, err)
	}
	ip := strings.TrimSpace(body)
	if net.ParseIP(ip) == nil {
		return "", fmt.Errorf("ask %s for the source address: expected an IP, got %q", a.Control, ip)
	}
	return ip, nil
}

// StartServers asks the agent to run the servers and returns them with their ports: a server
// asking for port 0 gets one the agent picked.
func (a Agent) StartServers(ctx context.Context, servers []Server) ([]Server, error) {
	body, _ := json.Marshal(servers)
	resp, err := a.call(ctx, http.MethodPost, "/servers", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("start servers on the external host %s: %w", a.Control, err)
	}
	var got []Server
	if err := json.Unmarshal([]byte(resp), &got); err != nil || len(got) != len(servers) {
		return nil, fmt.Errorf("start servers on the external host %s: expected %d servers with their ports, got %q", a.Control, len(servers), resp)
	}
	return got, nil
}

// StopServers asks the agent to stop every server.
func (a Agent) StopServers(ctx context.Context) error {
	if _, err := a.call(ctx, http.MethodDelete, "/servers", nil); err != nil {
		return fmt.Errorf("stop servers on the external host %s: %w", a.Control, err)
	}
	return nil
}

// Get fetches url once, with host as the Host header when set, and returns the body of a 200
// answer: how a run checks from its client pod that a route answers before measuring it.
func Get(ctx context.Context, url, host string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", &setting.Error{Name: "url", Value: strconv.Quote(url), Err: err}
	}
	if host != "" {
		req.Host = host
	}
	body, err := do(externalClient(nil), req)
	if err != nil {
		return "", fmt.Errorf("GET %s (Host %s): %w", url, host, err)
	}
	return strings.TrimSpace(body), nil
}

// do sends req and returns the body of a 200 answer, or an error carrying the server's message.
func do(client *http.Client, req *http.Request) (string, error) {
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	return string(b), nil
}

// tokenBytes is the token's entropy: 256 bits, as hex.
const tokenBytes = 32

// ReadToken reads the agent's token from path.
func ReadToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", fmt.Errorf("token file %s: empty: expected the token the agent was started with", path)
	}
	return token, nil
}

// TokenFile reads the agent's token from path, creating a new random one there (mode 0600)
// when the file does not exist, and says whether it did.
func TokenFile(path string) (token string, created bool, err error) {
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		token, err := ReadToken(path)
		return token, false, err
	}
	raw := make([]byte, tokenBytes)
	if _, err := rand.Read(raw); err != nil {
		return "", false, fmt.Errorf("make a token: %w", err)
	}
	token = hex.EncodeToString(raw)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", false, fmt.Errorf("token file: %w", err)
	}
	if _, err := fmt.Fprintln(f, token); err != nil {
		_ = f.Close() // the write error is the one that matters
		return "", false, fmt.Errorf("token file %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return "", false, fmt.Errorf("token file %s: %w", path, err)
	}
	return token, true, nil
}
