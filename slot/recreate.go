package slot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/internal/fatal"
	"github.com/cdc-relay/cdc-relay/internal/pgsession"
	"github.com/cdc-relay/cdc-relay/replication"
)

// A slot the relay creates to adopt rows (a table with pending values or
// an adopt predicate) is created in three steps: the intent is recorded
// (checkpoint.Store.BeginCreate), the slot is created, and its checkpoint
// row commits with the rows it adopts and the intent's end
// (recordNewSlot), all while the creator leads the slot (its advisory
// lock: a relay's session, or `migrate`, see Prepare). A creator
// stopped between the second step and the commit (SIGKILL, an OOM kill,
// PostgreSQL restarting) leaves a slot with the intent and no row, and
// nothing of its adoption committed; the slot's exported snapshot died
// with its connection, so the rows cannot be adopted as of its consistent
// point any more. The next creator to lead drops the slot and creates it
// again (recreateUnrecorded), which adopts them again, each once.

// adoptAppName is the application_name of the session that adopts rows
// for slot, while it adopts (pg_stat_activity shows at most 63 bytes):
// after its creator died, the next one ends it (endCreator).
func adoptAppName(slot string) string {
	name := "cdc-relay adopt " + slot
	return name[:min(len(name), 63)]
}

// unrecordedCreation reports whether cfg's slot, found without its
// checkpoint row, is one a creator began to create to adopt rows and
// never recorded (the intent's row, with no checkpoint row), and since
// when. Only the slot's leader may act on it: a creator leads while it
// creates.
func unrecordedCreation(ctx context.Context, store *checkpoint.Store, cfg Config) (time.Time, bool, error) {
	if !cfg.adoptsRows() {
		return time.Time{}, false, nil
	}
	return store.Creating(ctx, cfg.Slot)
}

// recreateUnrecorded heals cfg's slot, which a creator stopped before it
// recorded it (unrecordedCreation, since when it began): it ends what is
// left of the creator's sessions (endCreator), drops the slot, and
// creates it again with the intent recorded again (createAdopting),
// which adopts the rows. It returns the new slot's consistent point and
// how many rows it adopted. A drop that fails (PostgreSQL restarting, say)
// is an error to try again, with the intent kept for the next try.
func recreateUnrecorded(ctx context.Context, db DB, repl *replication.Conn, cfg Config, since time.Time, log *slog.Logger) (replication.NewSlot, int64, error) {
	log.Warn("replication slot was created by a relay (or migrate) stopped before it recorded the slot and adopted the rows: "+
		"dropping it and creating it again, which adopts them (none was adopted: that commits with the slot's checkpoint row)",
		"slot", cfg.Slot, "creation_began", since.UTC().Format(time.RFC3339))
	if err := endCreator(ctx, db, cfg.Slot, log); err != nil {
		return replication.NewSlot{}, 0, err
	}
	if err := dropIfExists(ctx, repl, cfg.Slot); err != nil {
		return replication.NewSlot{}, 0, fmt.Errorf("drop replication slot %q, created by a relay stopped before it recorded it, to create it again and adopt the rows: %w (trying again)", cfg.Slot, err)
	}
	return createAdopting(ctx, db, repl, cfg, log)
}

// endCreator ends the server processes a dead creator of slot left: the
// slot's walsender, if it is active (a creator killed while the slot waited
// for its consistent point), and the session that adopted rows (its
// statement runs on until it next writes to its client; a new slot would
// wait for its transaction). It waits until they have exited. It is called
// only by the slot's leader, so the creator is dead. Processes of a role
// this one may not signal (a migrate run as another role) are left to end
// by themselves: the drop, or the new slot, waits for them, and a failure
// here is logged, not returned, for the drop to decide.
func endCreator(ctx context.Context, db DB, slot string, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// pg_terminate_backend in the select list: see orphans.end.
	rows, _ := db.Query(ctx, `SELECT pid FROM (SELECT pid, pg_terminate_backend(pid) AS ended FROM (
		SELECT a.pid FROM pg_stat_activity a
		WHERE (a.pid = (SELECT active_pid FROM pg_replication_slots WHERE slot_name = $1)
			OR a.datname = current_database() AND a.application_name = $2)
			AND a.pid <> pg_backend_pid() AND pg_has_role(a.usesysid, 'MEMBER')) creator) t
		WHERE ended`, slot, adoptAppName(slot))
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		log.Warn("could not end the server processes of the stopped creator of the slot; the slot is dropped when they have ended", "slot", slot, "err", err)
		return nil
	}
	if len(pids) == 0 {
		return nil
	}
	log.Warn("ended the server processes the stopped creator of the slot left behind", "slot", slot, "pids", pids)
	return pgsession.WaitGone(ctx, db, pids)
}

// dropIfExists drops slot over repl; a slot gone already (its creator's
// walsender, ended while the slot waited for its consistent point, took
// it along) is no error.
func dropIfExists(ctx context.Context, repl *replication.Conn, slot string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := repl.DropSlot(ctx, slot)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42704" {
		return nil
	}
	return err
}

// createAdopting records the intent (checkpoint.Store.BeginCreate), creates
// cfg's slot over repl and records it with the rows it adopts
// (recordNewSlot). It returns the new slot and how many rows it adopted.
// The caller leads the slot.
func createAdopting(ctx context.Context, db DB, repl *replication.Conn, cfg Config, log *slog.Logger) (replication.NewSlot, int64, error) {
	if cfg.adoptsRows() {
		store := checkpoint.NewStore(db, cfg.CheckpointSchema, cfg.CheckpointTable)
		if err := store.BeginCreate(ctx, cfg.Slot); err != nil {
			return replication.NewSlot{}, 0, err
		}
	}
	stopWatch := WatchCreation(ctx, cfg.url(), cfg.Slot, log)
	created, err := repl.CreateSlot(ctx, cfg.Slot)
	stopWatch()
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "42710":
		// Created meanwhile (by a migrate of an earlier version, which
		// does not lead): the next session finds it.
		return created, 0, err
	case err != nil:
		return created, 0, fatal.Classify(err)
	}
	n, err := recordNewSlot(ctx, db, repl, cfg, created, log)
	return created, n, err
}

// UnrecordedCreation reports whether cfg's slot has no checkpoint row
// and a creator began to create it to adopt rows (checkpoint.Store.
// BeginCreate): a creator stopped before it recorded the slot, which
// `migrate` and `run` create again, adopting the rows. Without the
// relay's tables (not migrated yet) it reports false.
func UnrecordedCreation(ctx context.Context, db checkpoint.DB, cfg Config) (bool, error) {
	store := checkpoint.NewStore(db, cfg.CheckpointSchema, cfg.CheckpointTable)
	_, haveStored, err := store.Load(ctx, cfg.Slot)
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "42P01":
		return false, nil
	case err != nil || haveStored:
		return false, err
	}
	_, ok, err := unrecordedCreation(ctx, store, cfg)
	return ok, err
}
