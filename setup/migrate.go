package setup

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/internal/pgconnect"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/relay"
)

// Options are migrate's choices beyond the names in relay.Config.
type Options struct {
	// SkipOutbox leaves the outbox table alone: it must exist.
	SkipOutbox bool
	// NoSlot does not create the replication slot.
	NoSlot bool
}

// Result says what Migrate did.
type Result struct {
	migrations.Result
	// Slot is the replication slot, unless Options.NoSlot.
	Slot relay.PreparedSlot
	// SlotErr says why the slot was not created: a missing privilege, or
	// a slot the relay read before that was dropped (a *relay.SlotGapError:
	// creating it would hide the gap; `cdc-relay recover` repairs it).
	// migrate goes on without it.
	SlotErr error
	// Published names the outbox tables this run created the publication
	// for or added to it.
	Published []string
}

// Migrate applies the migrations for each table of rc, in turn (the
// relay's own tables with the first, each migration being idempotent;
// each outbox table is added to the publication), then creates rc's
// replication slot unless opts.NoSlot. A slot it may not create (SQLSTATE
// 42501) or must not create (a gap, see Result.SlotErr) is no error: the
// database is ready, and Result says why the slot is not. A connection
// that fails is described as [pgconnect.Open] does, never with the
// password.
func Migrate(ctx context.Context, postgresURL string, rc relay.Config, opts Options) (Result, error) {
	var res Result
	conn, err := pgconnect.Open(ctx, postgresURL, pgconnect.Options{})
	if err != nil {
		return res, err
	}
	defer conn.Close(context.Background())
	for i, t := range rc.Tables {
		tables := rc.Migrations(i)
		tables.SkipOutbox = opts.SkipOutbox
		r, err := migrations.Apply(ctx, conn, tables)
		if err != nil {
			return res, err
		}
		if i == 0 {
			res.Result = r
		}
		res.CreatedOutbox = res.CreatedOutbox || r.CreatedOutbox
		if r.CreatedPublication || r.AddedToPublication {
			res.Published = append(res.Published, t.Mapping.Schema+"."+t.Mapping.Table)
		}
	}
	if opts.NoSlot {
		return res, nil
	}
	if rc.PostgresURL == "" {
		rc.PostgresURL = postgresURL // a new slot's snapshot adopts the backlog over a replication connection
	}
	res.Slot, err = relay.PrepareSlot(ctx, conn, rc)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42501" || errors.As(err, new(*relay.SlotGapError)) {
		res.SlotErr, err = err, nil
	}
	return res, err
}
