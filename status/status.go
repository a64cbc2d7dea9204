package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/decoder"
)

// DB is what the store needs of a connection pool (*pgxpool.Pool has it).
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Store writes to the status table.
type Store struct {
	db    DB
	table string // quoted
}

// NewStore returns a store on schema.table.
func NewStore(db DB, schema, table string) *Store {
	return &Store{db: db, table: pgx.Identifier{schema, table}.Sanitize()}
}

// Failed records ev as FAILED with reason. When it returns nil the row is
// committed, and the event may count as delivered for the checkpoint. An
// event with an id that is already recorded for the same commit (PostgreSQL
// sent its transaction again) is not recorded twice.
func (s *Store) Failed(ctx context.Context, ev *decoder.Event, reason error) error {
	type header struct {
		Key   string  `json:"key"`
		Value *string `json:"value"`
	}
	hs := make([]header, len(ev.Headers))
	for i, h := range ev.Headers {
		hs[i].Key = h.Key
		if h.Value != nil {
			v := string(h.Value)
			hs[i].Value = &v
		}
	}
	headers, err := json.Marshal(hs)
	if err != nil {
		return fmt.Errorf("encode headers: %w", err)
	}
	var id, ts any
	if ev.ID != nil {
		id = string(ev.ID)
	}
	if !ev.Timestamp.IsZero() {
		ts = ev.Timestamp
	}
	insert := func(headers, ts any, reason string) error {
		_, err := s.db.Exec(ctx, "INSERT INTO "+s.table+
			" (event_id, topic, record_key, record_value, headers, record_timestamp, last_error, commit_lsn)"+
			" VALUES ($1, $2, $3, $4, $5, $6, $7, $8::pg_lsn)"+
			" ON CONFLICT (commit_lsn, event_id) WHERE event_id IS NOT NULL DO NOTHING",
			id, ev.Topic, ev.Key, ev.Value, headers, ts, reason, pglogrepl.LSN(ev.CommitLSN).String())
		return err
	}
	err = insert(headers, ts, reason.Error())
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "22") {
		// A header or the timestamp cannot be stored (a NUL in a header, a
		// timestamp out of range): keep the record without them rather
		// than stall the stream on a row that can never be written.
		err = insert(nil, nil, reason.Error()+" (headers and timestamp not stored: "+pgErr.Message+")")
	}
	if err != nil {
		return fmt.Errorf("record failed event %s in %s: %w", ev.ID, s.table, err)
	}
	return nil
}
