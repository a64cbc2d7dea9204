package migrations

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
)

// Check verifies that the database is prepared as [Apply] prepares it for
// cfg, without changing anything: wal_level is logical, the outbox table,
// the status table, the checkpoint table and the pause table exist, and the publication
// publishes the outbox table. With no outbox table (cfg.HasOutbox false)
// it checks the relay's own tables and that the publication exists. Its
// error says what to run or change.
func Check(ctx context.Context, q pgdb.DB, cfg Config) error {
	if err := CheckWALLevel(ctx, q); err != nil {
		return err
	}
	if err := checkTables(ctx, q, cfg); err != nil {
		return err
	}
	if !cfg.HasOutbox() {
		return checkPublicationExists(ctx, q, cfg)
	}
	outbox := pgx.Identifier{cfg.OutboxSchema, cfg.OutboxTable}.Sanitize()
	p, err := LookupPublication(ctx, q, cfg)
	switch {
	case err != nil:
		return err
	case !p.Exists:
		return fmt.Errorf("publication %q does not exist: run `cdc-relay migrate` first", cfg.Publication)
	case p.Partitioned && !p.ViaRoot:
		return fmt.Errorf("publication %q publishes the rows of the partitioned table %s under the names of its partitions, which the relay does not read: run %s",
			cfg.Publication, outbox, ViaRootFix(cfg.Publication))
	case !p.HasTable:
		return fmt.Errorf("publication %q does not include %s: run `cdc-relay migrate` with the same --table and --publication", cfg.Publication, outbox)
	}
	return nil
}

// checkTables requires the outbox table, when cfg names one, and the
// relay's tables, each at its newest migration.
func checkTables(ctx context.Context, q pgdb.DB, cfg Config) error {
	var outbox *string // NULL when cfg names none: to_regclass refuses an empty name
	if cfg.HasOutbox() {
		name := pgx.Identifier{cfg.OutboxSchema, cfg.OutboxTable}.Sanitize()
		outbox = &name
	}
	status := pgx.Identifier{cfg.StatusSchema, cfg.StatusTable}.Sanitize()
	checkpoint := pgx.Identifier{cfg.CheckpointSchema, cfg.CheckpointTable}.Sanitize()
	pauses := PauseTableName(cfg)
	var haveOutbox, haveStatus, haveCheckpoint, havePauses bool
	err := q.QueryRow(ctx, "SELECT $1::text IS NULL OR to_regclass($1) IS NOT NULL, to_regclass($2) IS NOT NULL, to_regclass($3) IS NOT NULL, to_regclass($4) IS NOT NULL",
		outbox, status, checkpoint, pauses).Scan(&haveOutbox, &haveStatus, &haveCheckpoint, &havePauses)
	if err != nil {
		return fmt.Errorf("check the database is prepared: %w", err)
	}
	switch {
	case !haveOutbox:
		return fmt.Errorf("outbox table %s does not exist: create it with `cdc-relay migrate`, or point --table at your outbox table", *outbox)
	case !haveStatus || !haveCheckpoint:
		return fmt.Errorf("the relay's tables (%s, %s) do not exist: run `cdc-relay migrate` first", status, checkpoint)
	}
	if err := checkVersion(ctx, q, cfg); err != nil {
		return err
	}
	if !havePauses {
		return fmt.Errorf("the relay's table of paused topics %s does not exist (migration 10), which this relay needs: run `cdc-relay migrate` (with the same table flags) first", pauses)
	}
	return nil
}

// checkPublicationExists requires cfg's publication, for a relay with no
// outbox table: whatever tables it holds, pgoutput sends the messages.
func checkPublicationExists(ctx context.Context, q pgdb.DB, cfg Config) error {
	var exists bool
	if err := q.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = $1)", cfg.Publication).Scan(&exists); err != nil {
		return fmt.Errorf("look up publication %q: %w", cfg.Publication, err)
	}
	if !exists {
		return fmt.Errorf("publication %q does not exist: run `cdc-relay migrate` (with the same --publication) first", cfg.Publication)
	}
	return nil
}

// newest names a column each relay table gains in its newest migration: a
// relay upgraded without running migrate would otherwise fail on a column
// it expects, over and over. The tables are checked, not the history: the
// history is one per schema, and the tables are named by flags.
var newest = []struct {
	table   func(Config) string // the table, quoted
	column  string
	version int
}{
	{table: statusTableName, column: "reload", version: 7},
	{table: statusTableName, column: "skipped_at", version: 10},
	{table: statusTableName, column: "original_topic", version: 11},
	{table: checkpointTableName, column: "publication_marks", version: 15},
	{table: statusTableName, column: "publisher", version: 20},
	{table: PauseTableName, column: "publisher", version: 20},
}

// statusTableName is cfg's status table, quoted.
func statusTableName(cfg Config) string {
	return pgx.Identifier{cfg.StatusSchema, cfg.StatusTable}.Sanitize()
}

// checkpointTableName is cfg's checkpoint table, quoted.
func checkpointTableName(cfg Config) string {
	return pgx.Identifier{cfg.CheckpointSchema, cfg.CheckpointTable}.Sanitize()
}

// checkVersion requires each relay table to have its newest migration; a
// table that does not exist (the pause table's, which checkTables names
// next) is left to the caller.
func checkVersion(ctx context.Context, q pgdb.DB, cfg Config) error {
	for _, n := range newest {
		table := n.table(cfg)
		var exists, ok bool
		err := q.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL,"+
			" EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = $2 AND NOT attisdropped)",
			table, n.column).Scan(&exists, &ok)
		if err != nil {
			return fmt.Errorf("check the columns of %s: %w", table, err)
		}
		if exists && !ok {
			return fmt.Errorf("%s lacks column %q (migration %d), which this relay needs: run `cdc-relay migrate` (with the same table flags) first", table, n.column, n.version)
		}
	}
	return checkSourceCopyIndex(ctx, q, cfg)
}

// checkSourceCopyIndex requires the status table's indexes the relay's
// statements need, valid: the index of a parked event's identity
// (PublisherCopyIndex, migration 21), which the relay's park names as its
// ON CONFLICT target and would fail on every event it parks without; and
// the index of the DEAD rows (migration 18), which every claim of the
// poller reads, and would read the whole status table without.
func checkSourceCopyIndex(ctx context.Context, q pgdb.DB, cfg Config) error {
	status := pgx.Identifier{cfg.StatusSchema, cfg.StatusTable}.Sanitize()
	for _, ix := range []struct {
		name    string
		version int
		what    string
	}{
		{PublisherCopyIndex(cfg), 21, "a parked event's source and publisher are part of its identity"},
		{indexName(cfg.StatusTable, "_dead_idx"), 18, "each claim of the poller reads the DEAD rows through it"},
	} {
		var ok bool
		err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid
			WHERE i.indrelid = $1::regclass AND c.relname = $2 AND i.indisvalid)`, status, ix.name).Scan(&ok)
		if err != nil {
			return fmt.Errorf("check the indexes of %s: %w", status, err)
		}
		if !ok {
			return fmt.Errorf("%s lacks a valid index %q (migration %d: %s), which this relay needs: "+
				"run `cdc-relay migrate` (with the same table flags) first; it builds the index without blocking writes", status, ix.name, ix.version, ix.what)
		}
	}
	return nil
}
