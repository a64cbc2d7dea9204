package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"syscall"

	"github.com/cdc-relay/cdc-relay/admin"
	"github.com/cdc-relay/cdc-relay/relay"
)

// defaultMetricsAddr is where `run` serves its metrics and endpoints, and
// where `status`, `pause` and `resume` look for a running relay. Its port is
// outside Prometheus' exporter range (9100-9999, fully allocated), so no
// well-known exporter on the host takes it.
const defaultMetricsAddr = "127.0.0.1:7187"

// formerDefaultMetricsAddr was defaultMetricsAddr before 0.5.0; its port is
// postgres_exporter's, which is why it changed.
const formerDefaultMetricsAddr = "127.0.0.1:9187"

// giveMetricsAddr ends an error that no relay answers at addr: it says to
// name the relay's address, and, at the default address, that the default
// changed in 0.5.0.
func giveMetricsAddr(addr string) string {
	if addr != defaultMetricsAddr {
		return "give the relay's --metrics-addr"
	}
	return fmt.Sprintf("%s is the default --metrics-addr since 0.5.0 (it was %s), and a relay of an earlier version, "+
		"or one started with --metrics-addr, listens elsewhere: give the relay's --metrics-addr (or CDC_RELAY_METRICS_ADDR)",
		defaultMetricsAddr, formerDefaultMetricsAddr)
}

// checkRelayAnswer returns an error when resp, the answer to request (such
// as "GET /status"), does not come from a cdc-relay admin server, whose
// every answer is JSON (package admin): another server listens there, such
// as postgres_exporter on 9187, cdc-relay's default port before 0.5.0.
func checkRelayAnswer(request string, resp *http.Response) error {
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "application/json" {
		return nil
	}
	kind := mt
	if err != nil {
		kind = fmt.Sprintf("Content-Type %q", resp.Header.Get("Content-Type"))
	}
	return fmt.Errorf("%s answered %s with %s, not JSON: the server there is not a cdc-relay admin server", request, resp.Status, kind)
}

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
