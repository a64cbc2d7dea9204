package status

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Adoptable is an outbox table whose rows with a pending status may be
// adopted: see Store.Adopt.
type Adoptable struct {
	// Schema and Name name the table; Source is its name as the status
	// table records it (source_table: schema.name, plain).
	Schema, Name, Source string
	// IDColumn and StatusColumn are its id and status columns.
	IDColumn, StatusColumn string
	// Pending are the status values that mean "not delivered yet".
	Pending []string
}

// Querier runs one statement (pgx.Tx has it).
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// adoptedReason is the last_error of an adopted row.
const adoptedReason = "adopted: pending when the relay's replication slot was created; sent as the row is now"

// Adopt parks, through q, every row of t whose status is one of its
// pending values, as Reload rows due now: the poller sends each as its
// outbox row is then, and writes the row back. It is the switch-over's
// backlog: run in a transaction that imported the snapshot a replication
// slot exported when it was created, it adopts exactly the rows committed
// before the slot's consistent point (the slot streams the others), so no
// row is missed or sent twice. It returns how many rows it adopted.
func (s *Store) Adopt(ctx context.Context, q Querier, t Adoptable) (int64, error) {
	if len(t.Pending) == 0 {
		return 0, nil
	}
	outbox := pgx.Identifier{t.Schema, t.Name}.Sanitize()
	tag, err := q.Exec(ctx, "INSERT INTO "+s.table+" (event_id, source_table, topic, status, reload, last_error)"+
		" SELECT format('%s', o."+pgx.Identifier{t.IDColumn}.Sanitize()+"), $1, '', 'FAILED', true, $2 FROM "+outbox+" AS o"+
		" WHERE o."+pgx.Identifier{t.StatusColumn}.Sanitize()+"::text = ANY($3::text[]) AND o."+pgx.Identifier{t.IDColumn}.Sanitize()+" IS NOT NULL",
		t.Source, adoptedReason, t.Pending)
	if err != nil {
		return 0, fmt.Errorf("adopt the pending rows of %s: %w", outbox, err)
	}
	return tag.RowsAffected(), nil
}
