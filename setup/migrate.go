package setup

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/internal/pgconnect"
	"github.com/cdc-relay/cdc-relay/internal/pgerr"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/outbox"
	"github.com/cdc-relay/cdc-relay/slot"
)

// Options are migrate's choices beyond the names in [Config].
type Options struct {
	// SkipOutbox leaves the outbox table alone: it must exist.
	SkipOutbox bool
	// NoSlot does not create the replication slot.
	NoSlot bool
	// Notice, when set, is called with a line for a person before a step
	// that may take minutes (see migrations.Config.Notice).
	Notice func(line string)
}

// Result says what Migrate did.
type Result struct {
	migrations.Result
	// Slot is the replication slot, unless Options.NoSlot.
	Slot slot.Prepared
	// SlotErr says why the slot was not created: a missing privilege, or
	// a slot the relay read before that was dropped (a *slot.GapError:
	// creating it would hide the gap; `cdc-relay recover` repairs it).
	// migrate goes on without it.
	SlotErr error
	// Published names the outbox tables this run created the publication
	// for or added to it.
	Published []string
	// Resets says, for each table whose reset trigger this run created,
	// kept or dropped, what became of it, in the order of the tables.
	Resets []ResetTrigger
	// Emit is the prefix the SQL helper cdc_relay.emit writes, created or
	// replaced by this run for the first message source whose content is
	// the envelope; "" when the config has none (emit writes envelopes:
	// a payload-only source would send them whole, as its values).
	Emit string
}

// ResetTrigger is what became of one table's reset trigger.
type ResetTrigger struct {
	// Table is the table's name as the config gives it (schema.name).
	Table string
	// Reset is the trigger the table's write-back asks for.
	migrations.Reset
	// Change is what migrate did: created, kept or dropped.
	Change migrations.ResetChange
}

// resetOf is the reset trigger t needs: its status column and pending
// values, if its write-back lists any, and the publishers a reset sends
// the event again to. preflight's checkResetTrigger asks for the same.
func resetOf(t outbox.Table) migrations.Reset {
	if t.WriteBack == nil || len(t.WriteBack.Pending) == 0 {
		return migrations.Reset{}
	}
	return migrations.Reset{IDColumn: t.Mapping.IDColumn, StatusColumn: t.WriteBack.StatusColumn, Pending: t.WriteBack.Pending,
		FromPending: t.WriteBack.RetryingIsPending(), Publishers: t.AllPublishers()}
}

// Migrate checks rc's adopt predicates first (see checkAdopt: a
// predicate PostgreSQL refuses, or a slot that exists already, fails
// before anything is created), then applies the migrations for each
// table of rc, in turn (the
// relay's own tables with the first, each migration being idempotent;
// each outbox table is added to the publication, and gets the reset
// trigger when its write-back lists pending values, or loses it when it
// lists none), or, with no table (a relay of messages only), once with
// no outbox table (the relay's tables and a publication of no table);
// with message sources, it creates the SQL helper cdc_relay.emit for the
// first one's prefix (migrations.CreateEmit); then it creates rc's
// replication slot unless opts.NoSlot. A slot it may not create (SQLSTATE
// 42501) or must not create (a gap, see Result.SlotErr) is no error: the
// database is ready, and Result says why the slot is not. A connection
// that fails is described as [pgconnect.Open] does, never with the
// password.
func Migrate(ctx context.Context, postgresURL string, rc Config, opts Options) (Result, error) {
	var res Result
	conn, err := pgconnect.Open(ctx, postgresURL, pgconnect.Options{})
	if err != nil {
		return res, err
	}
	defer conn.Close(context.Background())
	if err := checkAdopt(ctx, conn, rc, opts.NoSlot); err != nil {
		return res, err
	}
	if err := applyMigrations(ctx, conn, rc, opts, &res); err != nil {
		return res, migrateAs(ctx, conn, err)
	}
	if prefix, ok := emitPrefix(rc); ok {
		if err := migrations.CreateEmit(ctx, conn, prefix); err != nil {
			return res, migrateAs(ctx, conn, err)
		}
		res.Emit = prefix
	}
	if opts.NoSlot {
		return res, nil
	}
	if rc.PostgresURL == "" {
		rc.PostgresURL = postgresURL // a new slot's snapshot adopts the backlog over a replication connection
	}
	res.Slot, err = slot.Prepare(ctx, conn, rc.Config)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42501" || errors.As(err, new(*slot.GapError)) {
		res.SlotErr, err = err, nil
	}
	return res, err
}

// migrateAs is err, of a migration run on conn, saying who must run
// migrate when PostgreSQL refused conn's role a privilege
// ([pgerr.MigrateAs], with the role current_user reads, or the one conn
// logged in as).
func migrateAs(ctx context.Context, conn *pgx.Conn, err error) error {
	if !errors.As(err, new(*pgconn.PgError)) {
		return err
	}
	role := conn.Config().User
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_ = conn.QueryRow(ctx, "SELECT current_user::text").Scan(&role)
	return pgerr.MigrateAs(err, role)
}

// applyMigrations leaves the relay's tables, each outbox table of rc with
// its reset trigger, and the publication in place, and records in res what
// it did. With no table in rc it applies the migrations once, with no
// outbox table.
func applyMigrations(ctx context.Context, conn *pgx.Conn, rc Config, opts Options, res *Result) error {
	if len(rc.Tables) == 0 {
		own := ownTables(rc)
		own.Notice = opts.Notice
		r, err := migrations.Apply(ctx, conn, own)
		res.Result = r
		return err
	}
	for i, t := range rc.Tables {
		tables := rc.migrations(i)
		tables.SkipOutbox = opts.SkipOutbox
		tables.Reset = resetOf(t)
		tables.Notice = opts.Notice
		r, err := migrations.Apply(ctx, conn, tables)
		if err != nil {
			return err
		}
		if i == 0 {
			res.Result = r
		}
		res.CreatedOutbox = res.CreatedOutbox || r.CreatedOutbox
		name := migrations.SourceTable(tables)
		if r.CreatedPublication || r.AddedToPublication {
			res.Published = append(res.Published, name)
		}
		if r.Reset != migrations.ResetNone {
			res.Resets = append(res.Resets, ResetTrigger{Table: name, Reset: tables.Reset, Change: r.Reset})
		}
	}
	return nil
}

// ownTables names the relay's own tables and the publication of rc, with
// no outbox table: what a relay of messages only needs.
func ownTables(rc Config) migrations.Config {
	return migrations.Config{
		StatusSchema:     rc.StatusSchema,
		StatusTable:      rc.StatusTable,
		CheckpointSchema: rc.CheckpointSchema,
		CheckpointTable:  rc.CheckpointTable,
		Publication:      rc.Publication,
	}
}

// emitPrefix is the prefix of the first message source of rc whose
// content is the envelope, the one cdc_relay.emit writes; ok is false
// when rc has none.
func emitPrefix(rc Config) (prefix string, ok bool) {
	for _, m := range rc.Messages {
		if !m.PayloadOnly {
			return m.Prefix, true
		}
	}
	return "", false
}
