package status

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/outboxrow"
)

// Failed parks ev as FAILED with reason: Kafka refused it (too large, a
// topic missing or not writable), and the poller will try it again. When
// it returns nil the row is committed, and the event may count as
// delivered for the checkpoint. An event with an id that is already
// recorded for the same commit, topic, source and publisher (PostgreSQL
// sent its transaction again) is not recorded twice; the same id of
// another source (another outbox table, a message prefix) is another
// event, recorded too, and the same event parked for another publisher
// is that publisher's row.
//
// A row PostgreSQL refuses for its data (a NUL in a header, a timestamp out
// of range, an event id too long for the unique index) is stored with what
// can be stored, and last_error says what was dropped: such an error would
// come back on every retry and stall the stream. Other errors (the database
// down, a lock timeout) are returned, for the caller to retry.
func (s *Store) Failed(ctx context.Context, ev *decoder.Event, reason error) error {
	return s.park(ctx, ev, Failed, reason)
}

// Dead parks ev as DEAD with reason, as Failed does: the row itself cannot
// become the record it asks for (an illegal topic name, headers that are
// not a JSON object), so trying again would fail again, or deliver
// something else. The poller leaves it alone; an operator may fix the
// cause and retry it (`cdc-relay failed retry`), which delivers the copy
// stored here.
func (s *Store) Dead(ctx context.Context, ev *decoder.Event, reason error) error {
	return s.park(ctx, ev, Dead, reason)
}

func (s *Store) park(ctx context.Context, ev *decoder.Event, state string, reason error) error {
	row := s.row(ev, reason)
	row.status = state
	err := s.insert(ctx, row)
	for _, degrade := range []func(*failedRow, *pgconn.PgError) bool{dropHeadersAndTimestamp, shortenID, dropID} {
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || !dataError(pgErr) {
			break
		}
		if degrade(&row, pgErr) {
			err = s.insert(ctx, row)
		}
	}
	if err != nil {
		return fmt.Errorf("park event %s in %s: %w", ev.ID, s.table, err)
	}
	return nil
}

// failedRow is what one status row holds.
type failedRow struct {
	id, timestamp any
	sourceTable   any // text or nil
	topic         string
	key, value    []byte
	headers       []byte // JSON
	reason        string
	commitLSN     string
	status        string
	dropped       []string
	rowID         string // the outbox row's id, as the event had it (id may be shortened)
	partition     any    // int32 or nil: the event's placed partition
}

func (s *Store) row(ev *decoder.Event, reason error) failedRow {
	r := failedRow{topic: ev.Topic, key: ev.Key, value: ev.Value, reason: reason.Error(),
		commitLSN: pglogrepl.LSN(ev.CommitLSN).String(), headers: encodeHeaders(ev.Headers), sourceTable: s.sourceTable(ev.Table)}
	if ev.ID != nil {
		r.id = string(ev.ID)
		r.rowID = string(ev.ID)
	}
	if !ev.Timestamp.IsZero() {
		r.timestamp = ev.Timestamp
	}
	if ev.Placed {
		r.partition = ev.Partition
	}
	return r
}

func (s *Store) insert(ctx context.Context, r failedRow) error {
	reason := r.reason
	if len(r.dropped) > 0 {
		reason += " (not stored: " + strings.Join(r.dropped, "; ") + ")"
	}
	var headers any
	if r.headers != nil {
		headers = r.headers
	}
	sql := "INSERT INTO " + s.table + " (" + parkColumns + ")" +
		" VALUES ($1, $2, $3, $4, $5, $6, $7, $8::pg_lsn, $9, $10, $11::integer, " + s.publisherSQL + ")" + parkConflict
	args := []any{r.id, sanitize(r.topic), r.key, r.value, headers, r.timestamp, sanitize(reason), r.commitLSN, r.status, r.sourceTable, r.partition}
	source, _ := r.sourceTable.(string)
	// A WAITING or PAUSED event was not sent, and will be: its outbox row
	// stays pending until the poller delivers it.
	if !s.rows.Writes(source) || r.rowID == "" || r.status == Waiting || r.status == Paused {
		_, err := s.db.Exec(ctx, sql, args...)
		return err
	}
	// The outbox row says so in the same transaction, and only if this
	// parks the event: a row PostgreSQL sent again, already parked (and
	// perhaps delivered since by the poller), keeps what it says.
	return pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		var next time.Time
		err := tx.QueryRow(ctx, sql+" RETURNING next_attempt_at", args...).Scan(&next)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		o := outboxrow.Outcome{State: outboxrow.Failed, Reason: r.reason, Attempts: 1, NextAttempt: next, Attempted: true}
		if r.status == Dead {
			o = outboxrow.Outcome{State: outboxrow.Dead, Reason: r.reason, Attempts: 1, Attempted: true}
		}
		return s.rows.Write(ctx, tx, source, r.rowID, o)
	})
}

// parkColumns are the columns a park inserts: the event's, and the
// store's publisher last.
const parkColumns = "event_id, topic, record_key, record_value, headers, record_timestamp, last_error, commit_lsn, status, source_table, record_partition, publisher"

// parkConflict is the ON CONFLICT clause of a park: a parked event's
// identity, the columns of the status table's unique index of it
// (migration 21: its commit, id, topic, source and publisher), so that an
// event PostgreSQL sends again is not parked twice for a publisher, and
// one parked for another publisher is parked all the same.
const parkConflict = " ON CONFLICT (commit_lsn, event_id, topic, coalesce(source_table, ''), publisher) WHERE event_id IS NOT NULL DO NOTHING"

// dataError reports whether PostgreSQL refused the row for what it holds:
// data exceptions (class 22) and limits such as the index row size (54).
func dataError(e *pgconn.PgError) bool {
	return strings.HasPrefix(e.Code, "22") || strings.HasPrefix(e.Code, "54")
}

// dropHeadersAndTimestamp answers a data exception (class 22): a NUL in a
// header, a timestamp out of range.
func dropHeadersAndTimestamp(r *failedRow, e *pgconn.PgError) bool {
	if !strings.HasPrefix(e.Code, "22") || r.headers == nil && r.timestamp == nil {
		return false
	}
	r.headers, r.timestamp = nil, nil
	r.dropped = append(r.dropped, "headers and timestamp: "+e.Message)
	return true
}

// maxIDBytes keeps an event id well inside the unique index's row limit.
const maxIDBytes = 256

// shortenID answers an event id too long for the unique index (class 54):
// it keeps the id's first bytes and a hash of the whole, so that the same
// event sent again is still recognised.
func shortenID(r *failedRow, e *pgconn.PgError) bool {
	id, ok := r.id.(string)
	if !ok || len(id) <= maxIDBytes {
		return false
	}
	sum := sha256.Sum256([]byte(id))
	r.id = strings.ToValidUTF8(id[:maxIDBytes-72], "") + "…sha256:" + hex.EncodeToString(sum[:])
	r.dropped = append(r.dropped, fmt.Sprintf("the event id's %d bytes, shortened to a prefix and its hash: %s", len(id), e.Message))
	return true
}

// dropID is the last resort for the id.
func dropID(r *failedRow, e *pgconn.PgError) bool {
	if r.id == nil {
		return false
	}
	r.id = nil
	r.dropped = append(r.dropped, "the event id: "+e.Message)
	return true
}

// sanitize makes s storable as text: valid UTF-8 without NUL.
func sanitize(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
}

// encodeHeaders renders headers as the status table stores them: a JSON
// array of {"key", "value"} with null for a NULL value.
func encodeHeaders(hs []decoder.Header) []byte {
	type header struct {
		Key   string  `json:"key"`
		Value *string `json:"value"`
	}
	out := make([]header, len(hs))
	for i, h := range hs {
		out[i].Key = h.Key
		if h.Value != nil {
			v := string(h.Value)
			out[i].Value = &v
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil // strings and nil pointers always marshal
	}
	return b
}
