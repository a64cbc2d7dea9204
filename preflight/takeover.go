package preflight

import (
	"context"
	"strings"
	"time"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/pgdb"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/replication"
)

// Takeover is what a relay's start depends on in the database, for
// [CheckTakeover]: the tables as migrate prepared them, the message
// sources, the privileges of the relay's role, and the replication
// connection's URL and timeout.
type Takeover struct {
	Migrations         []migrations.Config      // one per table (migrations.Check), as at start
	Messages           []decoder.MessageMapping // the message sources: [CheckMessageSources]
	Privileges         []Privilege              // the role's: [RelayPrivileges]
	ReplicationURL     string                   // the replication connection's PostgreSQL URL
	ReplicationTimeout time.Duration            // its connect and status timeout
}

// CheckTakeover runs, reading only, the checks a leader's start depends
// on and returns the first that fails, or "": each table as migrate
// prepared it with the publication (migrations.Check, as at start), the
// server for the message sources, the role's privileges on the relay's
// tables, and a replication connection (the REPLICATION attribute,
// pg_hba.conf), opened and closed at once: it takes no slot and starts
// nothing. A database that could not be asked is a problem too: its
// error's text.
func CheckTakeover(ctx context.Context, q pgdb.Querier, t Takeover) string {
	for _, m := range t.Migrations {
		if err := migrations.Check(ctx, q, m); err != nil {
			return err.Error()
		}
	}
	if err := CheckMessageSources(ctx, q, t.Messages); err != nil {
		return err.Error()
	}
	problems, err := CheckPrivileges(ctx, q, t.Privileges)
	switch {
	case err != nil:
		return err.Error()
	case len(problems) > 0:
		msgs := make([]string, len(problems))
		for i, p := range problems {
			msgs[i] = p.String()
		}
		return strings.Join(msgs, "; ")
	}
	repl, err := replication.Connect(ctx, t.ReplicationURL, "cdc-relay standby check", t.ReplicationTimeout)
	if err != nil {
		return err.Error()
	}
	_ = repl.Close(context.Background())
	return ""
}
