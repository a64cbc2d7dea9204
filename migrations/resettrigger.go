package migrations

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
)

// OwnWriteSetting is the transaction-local setting that marks the relay's
// own write-back of a pending status value (write_back's retrying value
// may be one): the reset trigger's function returns at once when it is
// "on", so that the relay's write is not taken for a runbook's reset.
// Only the relay sets it, with set_config(OwnWriteSetting, 'on', true).
const OwnWriteSetting = "cdc_relay.own_write"

// ResetTriggerName is the name of the trigger [Apply] keeps on an outbox
// table whose write-back lists pending values.
const ResetTriggerName = "cdc_relay_reset"

// Reset says which reset trigger the outbox table needs: after an UPDATE
// that sets StatusColumn to one of Pending from a value that is not one of
// them (NULL included), or from any value with FromPending, the trigger
// calls [ResetFunction] with the row's IDColumn and [SourceTable], so
// that the relay sends the event again. With no Pending values the table
// needs none.
type Reset struct {
	// IDColumn is the column whose text the relay records as the event's
	// id.
	IDColumn string
	// StatusColumn is write-back's status column.
	StatusColumn string
	// Pending are the status values that mean "not delivered yet".
	Pending []string
	// FromPending fires the trigger on an UPDATE that sets a pending
	// value over a pending one too: write_back's retrying value is a
	// pending one, so a row being tried again reads pending, and a
	// runbook's reset of it (a fixed topic or payload) must be seen. Such
	// an UPDATE re-arms only an event the relay parked: one it never
	// parked (an application setting the status of a row it just
	// inserted) is left to the stream. The relay's own writes of that
	// value are marked (OwnWriteSetting), and the function leaves them
	// alone.
	FromPending bool
	// Publishers are the publishers the table's events go to: a reset
	// sends the event again to each (a row of each in the status table).
	// Empty, or Kafka alone, is Kafka's: the trigger then passes no
	// argument for them, as before publishers.
	Publishers []string
}

// publishersArg is the prefix of the trigger's last argument that names
// the publishers a reset sends the event again to (migration 0022).
const publishersArg = "cdc-relay publishers: "

// ResetChange says what [Apply] did to the outbox table's reset trigger.
type ResetChange int

const (
	// ResetNone: the table has no pending values and no reset trigger.
	ResetNone ResetChange = iota
	// ResetKept: the trigger was already the one Config.Reset asks for.
	ResetKept
	// ResetCreated: the trigger was created, or replaced because it was
	// another (other pending values, another column, disabled).
	ResetCreated
	// ResetDropped: the table has no pending values any more, and its
	// reset trigger was dropped.
	ResetDropped
)

// SourceTable is the outbox table's name as the relay records it in the
// status table's source_table: schema.name, plain, not quoted as an
// identifier (public.outbox).
func SourceTable(cfg Config) string {
	return cfg.OutboxSchema + "." + cfg.OutboxTable
}

// ResetTrigger is what an outbox table has of the reset trigger.
type ResetTrigger struct {
	// Exists is true when the table has a trigger named ResetTriggerName.
	Exists bool
	// Stale says how that trigger differs from the one Config.Reset asks
	// for, as a phrase ("is disabled", "calls ... instead of ...", "is
	// there, though ..." when Config.Reset lists no pending values); ""
	// when it is that trigger, or is missing.
	Stale string
}

// LookupResetTrigger reports the outbox table's reset trigger, reading the
// catalogs only: whether it exists, and whether it calls [ResetFunction]
// with the id column and [SourceTable], is enabled (not disabled, nor
// firing in replica sessions only), and was created for
// cfg.Reset's status column and pending values (its comment says which).
func LookupResetTrigger(ctx context.Context, q pgdb.DB, cfg Config) (ResetTrigger, error) {
	var have ResetTrigger
	var fn, comment string
	var sameFn, enabled bool
	var args []byte
	err := q.QueryRow(ctx, `SELECT (SELECT format('%I.%I()', n.nspname, p.proname) FROM pg_proc AS p JOIN pg_namespace AS n ON n.oid = p.pronamespace WHERE p.oid = t.tgfoid),
		coalesce(t.tgfoid = to_regprocedure($2)::oid, false), t.tgargs,
		t.tgenabled IN ('O', 'A'), coalesce(obj_description(t.oid, 'pg_trigger'), '')
		FROM pg_trigger AS t WHERE t.tgrelid = to_regclass($1) AND t.tgname = $3`,
		pgx.Identifier{cfg.OutboxSchema, cfg.OutboxTable}.Sanitize(), ResetFunction(cfg)+"()", ResetTriggerName).
		Scan(&fn, &sameFn, &args, &enabled, &comment)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return have, nil
	case err != nil:
		return have, fmt.Errorf("look up the reset trigger of %s: %w", SourceTable(cfg), err)
	}
	have.Exists = true
	want := resetArgs(cfg)
	switch {
	case len(cfg.Reset.Pending) == 0:
		have.Stale = "is there, though write_back lists no pending values"
	case !sameFn:
		have.Stale = fmt.Sprintf("calls %s instead of %s()", fn, ResetFunction(cfg))
	case comment == resetComment(flipFromPending(cfg.Reset)) && cfg.Reset.FromPending:
		have.Stale = "fires only when the status comes from a value that is not pending, though write_back's retrying value is a pending one " +
			"(a row being tried again reads pending, and a runbook's reset of it would go unseen)"
	case comment == resetComment(flipFromPending(cfg.Reset)):
		have.Stale = "also fires on a pending value set over a pending one, though write_back's retrying value is no longer a pending one"
	case !bytes.Equal(args, want):
		have.Stale = fmt.Sprintf("passes the arguments %q instead of %q", triggerArgs(args), triggerArgs(want))
	case !enabled:
		have.Stale = "is disabled"
	case comment != resetComment(cfg.Reset):
		have.Stale = "was created for another status column or other pending values"
	}
	return have, nil
}

// resetArgs are the trigger's arguments as pg_trigger.tgargs holds them:
// each ends with a NUL byte (which no name holds: quoting drops it).
func resetArgs(cfg Config) []byte {
	var b []byte
	for _, a := range triggerArgList(cfg) {
		b = append(append(b, strings.ReplaceAll(a, "\x00", "")...), 0)
	}
	return b
}

// triggerArgList are the arguments the trigger passes its function: the
// id column and SourceTable; with FromPending, the status column and the
// pending values too, so that the function can tell a pending value set
// over a pending one (which re-arms only an event the relay parked); and,
// for a table whose events go to a publisher beside Kafka, last, its
// publishers (publishersArg and their names, sorted, comma-separated: a
// publisher's name has no comma).
func triggerArgList(cfg Config) []string {
	args := []string{cfg.Reset.IDColumn, SourceTable(cfg)}
	if cfg.Reset.FromPending {
		args = append(append(args, cfg.Reset.StatusColumn), cfg.Reset.Pending...)
	}
	if pubs := cfg.Reset.Publishers; slices.ContainsFunc(pubs, func(p string) bool { return p != "kafka" }) {
		pubs = slices.Compact(slices.Sorted(slices.Values(pubs))) // a config's order changes no trigger
		args = append(args, publishersArg+strings.Join(pubs, ","))
	}
	return args
}

// triggerArgs splits tgargs into the arguments.
func triggerArgs(tgargs []byte) []string {
	return strings.Split(strings.TrimSuffix(string(tgargs), "\x00"), "\x00")
}

// flipFromPending is r with FromPending the other way.
func flipFromPending(r Reset) Reset {
	r.FromPending = !r.FromPending
	return r
}

// resetComment is the comment Apply puts on the trigger: what it does,
// for people, with the status column and the pending values quoted as
// JSON, so that a later run tells a current trigger from a stale one
// without replacing it (and locking the table to do so).
func resetComment(r Reset) string {
	col, _ := json.Marshal(r.StatusColumn)
	values, _ := json.Marshal(r.Pending)
	if r.FromPending {
		return fmt.Sprintf("cdc-relay migrate: an UPDATE that sets %s to one of %s, from any value, sends the event again", col, values)
	}
	return fmt.Sprintf("cdc-relay migrate: an UPDATE that sets %s back to one of %s sends the event again", col, values)
}

// createResetTrigger is the CREATE TRIGGER statement of cfg.Reset on
// outbox (quoted). Every name is quoted as an identifier and every value
// as a literal.
func createResetTrigger(cfg Config, outbox string) string {
	r := cfg.Reset
	col := pgx.Identifier{r.StatusColumn}.Sanitize()
	values := make([]string, len(r.Pending))
	for i, v := range r.Pending {
		values[i] = pgdb.QuoteLiteral(v)
	}
	pending := "ARRAY[" + strings.Join(values, ", ") + "]::text[]"
	when := fmt.Sprintf("NEW.%s::text = ANY (%s) AND (OLD.%s::text = ANY (%s)) IS NOT TRUE", col, pending, col, pending)
	if r.FromPending {
		when = fmt.Sprintf("NEW.%s::text = ANY (%s)", col, pending)
	}
	args := triggerArgList(cfg)
	for i, a := range args {
		args[i] = pgdb.QuoteLiteral(a)
	}
	return fmt.Sprintf("CREATE TRIGGER %s AFTER UPDATE OF %s ON %s FOR EACH ROW WHEN (%s) EXECUTE FUNCTION %s(%s)",
		pgx.Identifier{ResetTriggerName}.Sanitize(), col, outbox, when,
		ResetFunction(cfg), strings.Join(args, ", "))
}

// keepResetTrigger leaves the outbox table with the reset trigger
// cfg.Reset asks for, or without one when it lists no pending values. A
// current trigger is left alone; a stale one is dropped and created again
// in one transaction (PostgreSQL 13 has no CREATE OR REPLACE TRIGGER).
// Dropping a trigger locks the table against every reader and writer, so
// only a trigger that exists is dropped.
func keepResetTrigger(ctx context.Context, conn *pgx.Conn, cfg Config, outbox string) (ResetChange, error) {
	have, err := LookupResetTrigger(ctx, conn, cfg)
	if err != nil {
		return ResetNone, err
	}
	trigger := pgx.Identifier{ResetTriggerName}.Sanitize()
	var stmts []string
	if have.Exists {
		stmts = append(stmts, "DROP TRIGGER "+trigger+" ON "+outbox)
	}
	change := ResetCreated
	switch {
	case len(cfg.Reset.Pending) == 0 && !have.Exists:
		return ResetNone, nil
	case len(cfg.Reset.Pending) == 0:
		change = ResetDropped
	case have.Exists && have.Stale == "":
		return ResetKept, nil
	default:
		stmts = append(stmts, createResetTrigger(cfg, outbox),
			"COMMENT ON TRIGGER "+trigger+" ON "+outbox+" IS "+pgdb.QuoteLiteral(resetComment(cfg.Reset)))
	}
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		for _, s := range stmts {
			if _, err := tx.Exec(ctx, s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return ResetNone, resetTriggerError(change, outbox, err)
	}
	return change, nil
}

// resetTriggerError says why creating or dropping the reset trigger on
// outbox failed, and what to do.
func resetTriggerError(change ResetChange, outbox string, err error) error {
	what := "create the reset trigger on " + outbox
	if change == ResetDropped {
		what = "drop the reset trigger from " + outbox + " (write_back lists no pending values)"
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "55P03":
			return fmt.Errorf("%s: waited %s for a lock on the table that another session holds (a long query or transaction on it): "+
				"nothing was changed; run migrate again when it has ended: %w", what, lockTimeout, err)
		case "42501":
			return fmt.Errorf("%s: this role may not: run migrate as a role that may create triggers on the table (its owner) "+
				"when its write_back lists pending values: %w", what, err)
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}
