package binaries

// ImageTool is a binary the tools image carries beside its Debian packages: a workload's tool
// that Debian lacks, built into the cache like any component. Adding a workload that brings a
// tool is its component and one entry here; the local clusters' images (internal/cluster) and
// the image for users' clusters (internal/toolsimage) both read this table.
type ImageTool struct {
	// Component is the component that builds it (Lookup).
	Component string
	// Binary is its file in the cache's bin dir; the image puts it in /usr/local/bin.
	Binary string
	// Split marks a tool of the Gateway API split alone: a local cluster's image carries it
	// only where the cluster has the split, which builds it on first use.
	Split bool
	// LocalOnly marks the local cluster's own gateway: a user's cluster names its own
	// GatewayClass, so the image for users' clusters leaves it out.
	LocalOnly bool
	// Envoy marks Envoy Gateway's (the controller and the proxy): a local cluster's image
	// carries them only where the cluster runs Envoy Gateway, which builds them on first use.
	Envoy bool
}

// ImageTools lists the tools image's built binaries.
func ImageTools() []ImageTool {
	return []ImageTool{
		{Component: Stream, Binary: StreamBinary},                                 // the stream workload
		{Component: K6, Binary: K6Binary, Split: true},                            // gateway-split's load
		{Component: Traefik, Binary: TraefikBinary, Split: true, LocalOnly: true}, // the local gateway
		// Envoy Gateway, the other local implementation: its controller, certgen and the proxies'
		// shutdown manager are one binary; the proxies run Envoy.
		{Component: EnvoyGateway, Binary: EnvoyGatewayBinary, Split: true, LocalOnly: true, Envoy: true},
		{Component: Envoy, Binary: EnvoyBinary, Split: true, LocalOnly: true, Envoy: true},
	}
}
