package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"syscall"

	"github.com/cdc-relay/cdc-relay/admin"
	"github.com/cdc-relay/cdc-relay/relay"
)

// defaultMetricsAddr is where `run` serves its metrics and endpoints, and
// where `status` looks for a running relay.
const defaultMetricsAddr = "127.0.0.1:9187"

// adminFlags are run's flags for its HTTP endpoints (package admin).
type adminFlags struct {
	addr      string
	token     string
	tokenFile string
}

func (a *adminFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&a.addr, "metrics-addr", defaultMetricsAddr,
		"serve /metrics, /healthz, /readyz, /status and the admin endpoints on this `host:port`; \"\" serves none. "+
			"On an address other than loopback, the admin endpoints need --admin-token")
	fs.StringVar(&a.token, "admin-token", "",
		"the bearer `token` the admin endpoints (/pause, /resume, /failed) require; prefer CDC_RELAY_ADMIN_TOKEN or --admin-token-file, as ps shows the command line")
	fs.StringVar(&a.tokenFile, "admin-token-file", "", "read the admin token from this `file`")
}

// finish reads the token file, if any.
func (a *adminFlags) finish() (err error) {
	a.token, err = valueOrFile("admin-token", a.token, a.tokenFile, "the admin token")
	return err
}

// serve starts the endpoints of rel, or returns nil, nil when --metrics-addr
// is empty.
func (a *adminFlags) serve(rel *relay.Relay, log *slog.Logger) (*admin.Server, error) {
	if a.addr == "" {
		return nil, nil
	}
	srv, err := admin.Listen(rel, admin.Options{Addr: a.addr, Token: a.token, Gatherer: rel.Metrics().Registry, Logger: log})
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("--metrics-addr %s is in use (another relay on this machine?): give each relay its own, or \"\" to serve none", a.addr)
		}
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	return srv, nil
}
