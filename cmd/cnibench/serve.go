package main

import (
	"context"
	"fmt"
	"io"

	"github.com/cnibench/cnibench/internal/external"
	"github.com/cnibench/cnibench/internal/serve"
	"github.com/cnibench/cnibench/internal/setting"
	"github.com/cnibench/cnibench/internal/store"
	"github.com/spf13/cobra"
)

// serveOptions are the flags of `cnibench serve`.
type serveOptions struct {
	location        string // --store
	listen          string // --listen
	tokenFile       string // --token-file
	tlsCert, tlsKey string // --tls-cert, --tls-key
}

func newServeCommand() *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the stored runs as web pages: runs, a run's verdict and charts, samples, comparisons, history",
		Long: `Serves the results store, read-only, as pages to look at in a browser (and as JSON: add .json
to any page's path, or send Accept: application/json):

  /                      the runs, newest first: ?label=SELECTOR&target=&suite=&since=&until=&page=N
  /runs/RUN              a run: the verdict and charts of cnibench report, each chart linked to its samples
  /runs/RUN/samples      its samples (?target=&path=&workload=&pairs=), each with the tool's raw output
  /runs/RUN/flamegraph   the flame graph of a profiled cell (?target=&path=&workload=&pairs=)
  /compare               ?a=RUN&b=RUN (RUN or RUN/TARGET), or ?run=RUN&a=TARGET&b=TARGET: compare and its gate
  /history               ?selector=SELECTOR: each cell's figures over the runs, change points marked

Pages are read from the store at each request, so runs that finish while it serves appear
without a restart. It listens on 127.0.0.1:8080 unless told otherwise; any other address needs
--token-file (a new random token is written there, mode 0600, when the file does not exist):
browsers log in with it once (a cookie), other clients send Authorization: Bearer TOKEN. With
--tls-cert and --tls-key it serves HTTPS, as cnibench agent serve does.`,
		Example: `  cnibench serve                       # then open http://127.0.0.1:8080
  cnibench serve --store postgres://bench@db/results --listen :8443 --token-file serve.token --tls-cert cert.pem --tls-key key.pem`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.ErrOrStderr())
		},
	}
	storeFlags(cmd, &o.location, false)
	f := cmd.Flags()
	f.StringVar(&o.listen, "listen", serve.DefaultListen, "host:port to listen on; an address other than a loopback one needs --token-file")
	f.StringVar(&o.tokenFile, "token-file", "", "file holding the token every request must carry; made, with a new random token, when missing")
	f.StringVar(&o.tlsCert, "tls-cert", "", "PEM certificate to serve HTTPS with (with --tls-key)")
	f.StringVar(&o.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	cmd.MarkFlagsRequiredTogether("tls-cert", "tls-key")
	return cmd
}

// run checks the settings, opens the store read-only and serves until ctx ends.
func (o serveOptions) run(ctx context.Context, log io.Writer) error {
	so := serve.Options{Listen: o.listen, Log: log}
	if o.tokenFile != "" {
		token, created, err := external.TokenFile(o.tokenFile)
		if err != nil {
			return &setting.Error{Name: "token-file", Value: o.tokenFile, Err: err}
		}
		if created {
			fmt.Fprintf(log, "wrote a new token to %s: log in with it\n", o.tokenFile)
		}
		so.Token = token
	}
	if err := so.Check(); err != nil {
		return err
	}
	var err error
	if so.TLS, err = external.TLSConfig(o.tlsCert, o.tlsKey); err != nil {
		return err
	}
	// A store that does not exist yet (serve started before the first run) shows no runs
	// until the first run creates it.
	db, err := store.OpenLater(ctx, o.location)
	if err != nil {
		return &setting.Error{Name: "store", Err: err}
	}
	defer db.Close()
	so.Store, so.Where = db, db.Location()
	return serve.Serve(ctx, so)
}
