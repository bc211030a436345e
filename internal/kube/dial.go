package kube

import (
	"net"
	"net/http"
	"net/url"
	"time"

	"k8s.io/apimachinery/pkg/util/httpstream/spdy"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
)

// Connections to the API server: how long a dial may take, and how long sent data may stay
// unacknowledged before the connection is given up. Without the second, a connection whose
// server vanished from the network (a partition, a dropped port) stays open for the kernel's
// retransmissions, about 15 minutes: an exec stream then hangs until the sample's own timeout
// and fails without saying why. The exec streams send a ping every 5 s, so a partition always
// leaves data unacknowledged; a server that is only slow still acknowledges at once.
const (
	dialTimeout = 15 * time.Second
	userTimeout = 20 * time.Second
)

// apiDialer dials the API server; its connections end userTimeout after the server stops
// acknowledging (dialControl, on Linux).
func apiDialer() *net.Dialer {
	return &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second, Control: dialControl}
}

// spdyExecutor is remotecommand.NewSPDYExecutor with the API dialer: client-go's own SPDY
// transport dials with a dialer of its own, whatever the config's Dial says.
func spdyExecutor(cfg *rest.Config, u *url.URL) (remotecommand.Executor, error) {
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, err
	}
	proxy := http.ProxyFromEnvironment
	if cfg.Proxy != nil {
		proxy = cfg.Proxy
	}
	// 5 s pings, as client-go's: they keep a quiet stream's connection checked.
	upgrader, err := spdy.NewRoundTripperWithConfig(spdy.RoundTripperConfig{TLS: tlsConfig, Proxier: proxy, PingPeriod: 5 * time.Second})
	if err != nil {
		return nil, err
	}
	upgrader.Dialer = apiDialer()
	wrapper, err := rest.HTTPWrappersForConfig(cfg, upgrader)
	if err != nil {
		return nil, err
	}
	return remotecommand.NewSPDYExecutorForTransports(wrapper, upgrader, "POST", u)
}
