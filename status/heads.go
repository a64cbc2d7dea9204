package status

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
	"github.com/cdc-relay/cdc-relay/progress"
)

// HeadsQuery says which held rows Heads reads.
type HeadsQuery struct {
	// Topics are the topics to read.
	Topics []string
	// Source, when set, keeps the rows of that outbox table (its
	// source_table, as SourceTables names it) and those parked before the
	// column existed (NULL).
	Source string
	// AfterID, when set, keeps the rows whose status table id is above
	// it: those parked since a read that returned it as its MaxID, once
	// none of that read's Writers is writing any more
	// (progress.HeadsRead).
	AfterID int64
}

// BehindPrefix begins the reason of an event parked untried because its
// publisher's receiver answers more slowly than the events arrive (a
// webhook's lanes park the events that waited too long in them, for the
// publisher's poller: package relay/delivery/lanes): behind, not
// failing. Its row is FAILED, as every row the poller is to send, with
// no attempt; Heads does not count it as failing until the poller tries
// it (its attempts count from then, and its last error is the
// attempt's).
const BehindPrefix = "waiting: "

// integerID is the event id of row d as a bigint, NULL when it is not an
// integer in a bigint's range.
const integerID = "CASE WHEN d.event_id ~ '^-?[0-9]{1,19}$' AND d.event_id::numeric BETWEEN -9223372036854775808 AND 9223372036854775807 THEN d.event_id::bigint END"

// Heads reads the heads of the topics of q that have held rows: for each,
// the lowest integer event id among them, and the first (by the status
// table's id, the order it was parked in) that failed, DEAD or FAILED
// after an attempt (an adopted or reset row is FAILED before it was
// tried, and so is one parked behind a slow receiver: BehindPrefix),
// with its failed attempts, the stream's refusal of a row it
// parked counted with the poller's. It reads only; a read of every held row of a topic costs a scan of them (a
// paused topic's backlog), one with AfterID a range of the primary key.
// A row whose topic changed in place since a read (`failed retry
// --topic`) is not among the rows parked since.
func (s *Store) Heads(ctx context.Context, q HeadsQuery) (progress.HeadsRead, error) {
	var read progress.HeadsRead
	err := s.db.QueryRow(ctx, "SELECT coalesce((SELECT max(m.id) FROM "+s.table+" AS m WHERE "+s.mine("m")+"), 0),"+
		" ARRAY(SELECT l.virtualtransaction FROM pg_locks AS l WHERE l.locktype = 'relation' AND l.relation = to_regclass($1) AND l.mode = 'RowExclusiveLock' AND l.granted"+
		" AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()))", s.table).Scan(&read.MaxID, &read.Writers)
	if err != nil {
		return read, fmt.Errorf("read the highest id of %s: %w", s.table, err)
	}
	// An adopted or reset row (reload) is FAILED before it was tried, and
	// so is a row parked behind a slow receiver (BehindPrefix).
	failing := "d.status = 'DEAD' OR d.status = 'FAILED' AND (NOT d.reload OR d.attempts > 0)" +
		" AND NOT (d.attempts = 0 AND starts_with(d.last_error, " + pgdb.QuoteLiteral(BehindPrefix) + "))"
	rows, _ := s.db.Query(ctx, "WITH g AS (SELECT d.topic, min("+integerID+") AS min_id, bool_or(("+integerID+") IS NULL) AS unknown,"+
		" min(d.id) FILTER (WHERE "+failing+") AS failing_id FROM "+s.table+" AS d"+
		" WHERE "+heldWhere("d")+" AND d.topic = ANY($1) AND ($2 = '' OR d.source_table = $2 OR d.source_table IS NULL) AND d.id > $3 AND "+s.mine("d")+" GROUP BY d.topic)"+
		" SELECT g.topic, g.min_id, g.unknown, g.failing_id, f.attempts + CASE WHEN f.reload THEN 0 ELSE 1 END, coalesce(f.last_error, '')"+
		" FROM g LEFT JOIN "+s.table+" AS f ON f.id = g.failing_id AND "+s.mine("f"),
		q.Topics, q.Source, q.AfterID)
	read.Heads, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (progress.Head, error) {
		var h progress.Head
		var minID, failingID *int64
		var attempts *int
		var lastError *string
		err := r.Scan(&h.Topic, &minID, &h.Unknown, &failingID, &attempts, &lastError)
		if minID != nil {
			h.MinID, h.HasMinID = *minID, true
		}
		if failingID != nil && attempts != nil && lastError != nil {
			h.Failing, h.Attempts, h.LastError = true, *attempts, *lastError
		}
		return h, err
	})
	if err != nil {
		return read, fmt.Errorf("read the held events of each topic in %s: %w", s.table, err)
	}
	return read, nil
}
