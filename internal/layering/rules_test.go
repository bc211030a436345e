package layering

// rendering is what turns stored runs into figures and documents, with the suite schema that
// it reads: it works on recorded values, so it must build anywhere the binary does, quickly,
// and compile neither a cluster, nor a client of one, nor a database driver.
var rendering = []string{
	"internal/analysis", "internal/report", "internal/export", "internal/compare", "internal/history", "internal/suite",
	"internal/serve",
}

// rules are the layering rules: no package matching from may depend, directly or through
// others, on a package matching forbid. Patterns starting with internal/ or cmd/ are this
// module's packages; a trailing /... matches a path and every path below it.
var rules = []rule{
	{rendering, "internal/cluster/...", "the local cluster's builder: the suite and the reports name a local cluster through internal/lab"},
	{rendering, "internal/kube", "client-go: reports read recorded fingerprints, never a live cluster"},
	{rendering, "internal/runner", "the measuring: reports read what a run stored"},
	{rendering, "internal/agent", "the in-pod agent: what it prints is typed in internal/agentcmd"},
	{rendering, "internal/store", "the store holds the database drivers: read runs as internal/record values through a narrow interface"},
	{rendering, "modernc.org/sqlite/...", "a database driver: only internal/store opens a database"},
	{rendering, "github.com/jackc/pgx/...", "a database driver: only internal/store opens a database"},
	{rendering, "k8s.io/...", "Kubernetes' libraries: the schema checks names with internal/lab, reports never talk to a cluster"},
	{[]string{"internal/record"}, "database/sql/...", "the store's data types are plain values: how they are stored is internal/store's"},
	{[]string{"internal/record"}, "modernc.org/sqlite/...", "the store's data types compile no driver"},
	{[]string{"internal/record"}, "github.com/jackc/pgx/...", "the store's data types compile no driver"},
	{[]string{"internal/record"}, "k8s.io/...", "the store's data types are plain values"},
	{[]string{"internal/runner"}, "internal/cluster/...", "the runner measures what a Provider gives it: the local cluster is internal/provider/local's"},
	{[]string{"internal/runner"}, "internal/provider/...", "providers are handed to the runner (Options.Local), so that it compiles none of them"},
	{[]string{"internal/engine"}, "k8s.io/...", "an engine builds argv and parses output; the runner execs it"},
	{[]string{"internal/..."}, "internal/agent", "the agent runs in pods: callers exec it with internal/agentcmd's argv and decode its output with agentcmd's types"},
}
