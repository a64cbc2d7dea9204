package migrations

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Check verifies that the database is prepared as [Apply] prepares it for
// cfg, without changing anything: wal_level is logical, the outbox table,
// the status table and the checkpoint table exist, and the publication
// publishes the outbox table. Its error says what to run or change.
func Check(ctx context.Context, q Querier, cfg Config) error {
	if err := CheckWALLevel(ctx, q); err != nil {
		return err
	}
	outbox := pgx.Identifier{cfg.OutboxSchema, cfg.OutboxTable}.Sanitize()
	status := pgx.Identifier{cfg.StatusSchema, cfg.StatusTable}.Sanitize()
	checkpoint := pgx.Identifier{cfg.CheckpointSchema, cfg.CheckpointTable}.Sanitize()
	var haveOutbox, haveStatus, haveCheckpoint bool
	err := q.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL, to_regclass($2) IS NOT NULL, to_regclass($3) IS NOT NULL",
		outbox, status, checkpoint).Scan(&haveOutbox, &haveStatus, &haveCheckpoint)
	if err != nil {
		return fmt.Errorf("check the database is prepared: %w", err)
	}
	switch {
	case !haveOutbox:
		return fmt.Errorf("outbox table %s does not exist: create it with `cdc-relay migrate`, or point --table at your outbox table", outbox)
	case !haveStatus || !haveCheckpoint:
		return fmt.Errorf("the relay's tables (%s, %s) do not exist: run `cdc-relay migrate` first", status, checkpoint)
	}
	if err := checkVersion(ctx, q, cfg); err != nil {
		return err
	}
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

// checkVersion requires every embedded migration to be applied: a relay
// upgraded without running migrate would otherwise fail on a column it
// expects, over and over.
func checkVersion(ctx context.Context, q Querier, cfg Config) error {
	ms, err := versioned()
	if err != nil {
		return fmt.Errorf("read embedded migrations: %w", err)
	}
	want := ms[len(ms)-1].version
	history := historyTable(cfg)
	var exists bool
	var have int
	if err := q.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", history).Scan(&exists); err != nil {
		return fmt.Errorf("look up the migration history %s: %w", history, err)
	}
	if exists {
		if err := q.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM "+history).Scan(&have); err != nil {
			return fmt.Errorf("read the migration history %s: %w", history, err)
		}
	}
	if have < want {
		return fmt.Errorf("the relay's tables are at migration %d, and this relay needs %d: run `cdc-relay migrate` (with the same table flags) first", have, want)
	}
	return nil
}
