package pgconnect

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgerr"
)

// Options are what a command asks of its session beyond the connection
// string. The zero value takes the connection string as it is.
type Options struct {
	// RuntimeParams are set for the session, over the connection string's
	// own: application_name, TimeZone, default_transaction_read_only, …
	RuntimeParams map[string]string
}

// Open connects to the PostgreSQL server that url (a URL or a keyword/value
// connection string) names. A connection string that does not parse is an
// error that quotes it with its password masked ([pgerr.Parse]); a failed
// connection is described by [pgerr.Connect]: where to, the cause, and
// what to do about common causes. Either wraps pgx's error.
func Open(ctx context.Context, url string, opts Options) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse PostgreSQL URL: %w", pgerr.Parse(err))
	}
	for name, value := range opts.RuntimeParams {
		cfg.RuntimeParams[name] = value
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, pgerr.Connect(&cfg.Config, err, "")
	}
	return conn, nil
}
