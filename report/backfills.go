package report

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
	"github.com/cdc-relay/cdc-relay/migrations"
)

// Backfill is a running backfill (`cdc-relay backfill`) of an outbox
// table, as its row in the table of backfills says.
type Backfill struct {
	Table     string `json:"table"`
	RunID     string `json:"run_id"`
	Predicate string `json:"predicate"`
	// RowsPublished are the rows Kafka acknowledged so far, of
	// RowsSelected counted at the start; LastKey is the key of the last.
	RowsPublished int64     `json:"rows_published"`
	RowsSelected  int64     `json:"rows_selected"`
	LastKey       string    `json:"last_key,omitempty"`
	StartedAt     time.Time `json:"started_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// backfillsQuery reads the running backfills of the table of backfills
// (%s): rows that say running and whose session lives (a backfill killed
// leaves its row as it was).
const backfillsQuery = `SELECT table_name, run_id, predicate, rows_published, rows_selected, coalesce(last_key, ''), started_at, updated_at
FROM %s b WHERE state = 'running'
AND EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = b.backend_pid AND a.application_name = b.application_name)
ORDER BY table_name`

// readBackfills reads the running backfills. Where they cannot be read,
// there are none, and problem says why and what to do: the table is
// missing (a database migrated by an earlier version), the role may not
// read it (migrated, but not granted since), or the read failed otherwise.
// The relay's other figures never depend on it.
func readBackfills(ctx context.Context, db pgdb.Querier, names Names) (bs []Backfill, problem string) {
	table := migrations.BackfillTableName(migrations.Config{CheckpointSchema: names.CheckpointSchema})
	rows, _ := db.Query(ctx, fmt.Sprintf(backfillsQuery, table))
	bs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Backfill, error) {
		var b Backfill
		err := row.Scan(&b.Table, &b.RunID, &b.Predicate, &b.RowsPublished, &b.RowsSelected, &b.LastKey, &b.StartedAt, &b.UpdatedAt)
		return b, err
	})
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "42P01":
		return nil, fmt.Sprintf("the table of backfills %s does not exist: run `cdc-relay migrate` of this version to show running backfills", table)
	case errors.As(err, &pgErr) && pgErr.Code == "42501":
		return nil, fmt.Sprintf("the role may not read the table of backfills %s: running backfills are not shown; as an administrator, run GRANT SELECT ON %s TO <the relay's role> (see `cdc-relay migrate --print-grants`)", table, table)
	case err != nil:
		return nil, fmt.Sprintf("could not read the running backfills in %s, so they are not shown (the other figures are): %v; "+
			"if the table was altered, run `cdc-relay migrate` of this version or restore its columns", table, err)
	}
	return bs, ""
}
