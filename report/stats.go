package report

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/replication"
)

// Names names what ReadDatabaseStats reads: the slot, the status table,
// and the schema of the pause table and of the table of backfills (the
// checkpoint table's).
type Names struct {
	Slot                      string
	StatusSchema, StatusTable string
	CheckpointSchema          string
	// PausedIn are the teams' progress tables that pause topics for the
	// relay (a config file's progress:).
	PausedIn []PausedIn
}

// PausedIn is a team's progress table that pauses topics for the relay.
type PausedIn struct {
	// Table names it, as schema.table.
	Table string
	// Publisher is the relay's publisher whose topics it pauses:
	// "kafka", or a webhook publisher's name.
	Publisher string
	// Select is the SELECT of the topics it pauses
	// (progress.Table.PausedTopics).
	Select string
}

// TopicPausedIn is a topic a team paused in its progress table.
type TopicPausedIn struct {
	Topic string `json:"topic"`
	Table string `json:"table"`
	// Publisher is the publisher it is paused for, when not Kafka.
	Publisher string `json:"publisher,omitempty"`
}

// PublisherTopic is a topic paused for a publisher beside Kafka.
type PublisherTopic struct {
	Publisher string `json:"publisher"`
	Topic     string `json:"topic"`
}

// DatabaseStats is what PostgreSQL says of a relay's slot and status table
// at one moment: enough to report lag, retained WAL, parked events and
// failover when no relay runs.
type DatabaseStats struct {
	// At is when the figures were read.
	At time.Time
	// WALEnd is the server's current WAL write position.
	WALEnd pglogrepl.LSN
	// SlotExists says whether the slot exists; the slot fields below are
	// zero otherwise. SlotActive: a process streams it now.
	SlotExists, SlotActive bool
	// Confirmed is the slot's confirmed_flush_lsn; Restart its restart_lsn,
	// the oldest WAL it keeps.
	Confirmed, Restart pglogrepl.LSN
	// Failed, Dead, Waiting and Paused count the status table's held
	// rows, in each state, over every topic.
	Failed, Dead, Waiting, Paused int64
	// PausedIn are the topics the teams paused in their progress tables.
	PausedIn []TopicPausedIn
	// Topics are the topics with the most held rows, at most MaxHeldTopics,
	// most held first; HeldTopics counts every topic with held rows.
	Topics     []TopicHeld
	HeldTopics int
	// OldestOwedSeconds is the age of the oldest held row the relay
	// still delivers itself (FAILED, WAITING or PAUSED; not DEAD, given
	// up), over every topic, by its created_at (when it was parked or
	// adopted); 0 when none.
	OldestOwedSeconds float64
	// HeldAt is when the held counts above were counted: At, but for a
	// StatsReader's reading that gave its last counts again.
	HeldAt time.Time
	// StatusFile is the status table's file (pg_relation_filenode): a
	// TRUNCATE gives it a new one, which a DELETE does not.
	StatusFile int64
	// StatusChurn is the status table's rows updated or deleted, as the
	// statistics count them (n_tup_upd + n_tup_del): a delivery, skip or
	// purge raises it; a TRUNCATE, VACUUM FULL or CLUSTER does not.
	StatusChurn int64
	// PausedTopics are the slot's paused topics in the pause table, for
	// Kafka, sorted (none where the table is missing: a database migrated
	// by an earlier version).
	PausedTopics []string
	// PublishersPaused are the topics paused in the pause table for the
	// publishers beside Kafka, by publisher then topic.
	PublishersPaused []PublisherTopic
	// Failover is the server's version and synchronized_standby_slots,
	// and whether the slot is a failover slot.
	Failover replication.Failover
	// Backfills are the backfills running now (none where the table of
	// backfills is missing or the role may not read it).
	Backfills []Backfill
	// BackfillsProblem, when set, says why the backfills could not be
	// read, and what to do: the table is missing, the role lacks SELECT on
	// it, or the read failed otherwise. The other figures are read all the
	// same.
	BackfillsProblem string
}

// LagBytes is the WAL written after the slot's confirmed position; -1
// without a slot.
func (s DatabaseStats) LagBytes() int64 {
	if !s.SlotExists {
		return -1
	}
	return max(0, int64(s.WALEnd)-int64(s.Confirmed))
}

// WALRetained is the WAL the slot keeps on the server, in bytes; -1 without
// a slot.
func (s DatabaseStats) WALRetained() int64 {
	if !s.SlotExists || s.Restart == 0 {
		return -1
	}
	return max(0, int64(s.WALEnd)-int64(s.Restart))
}

// ReadDatabaseStats reads the slot and the tables names names. It needs
// no privilege beyond what the relay's role has (pg_replication_slots is
// readable by every role).
func ReadDatabaseStats(ctx context.Context, db pgdb.Querier, names Names) (DatabaseStats, error) {
	return readStats(ctx, db, names, nil)
}

// readStats reads the slot and the tables names names; the held counts
// with held, when set, rather than with a query of their own.
func readStats(ctx context.Context, db pgdb.Querier, names Names, held func(*DatabaseStats) error) (DatabaseStats, error) {
	s := DatabaseStats{At: time.Now()}
	err := readSlot(ctx, db, names, &s)
	if err != nil {
		return s, err
	}
	if err = readChurn(ctx, db, names, &s); err != nil {
		return s, err
	}
	if held == nil {
		held = func(s *DatabaseStats) error { return readHeld(ctx, db, names, s) }
	}
	if err = held(&s); err != nil {
		return s, err
	}
	if s.PausedTopics, s.PublishersPaused, err = readPausedTopics(ctx, db, names); err != nil {
		return s, err
	}
	s.PausedIn = readPausedIn(ctx, db, names)
	s.Backfills, s.BackfillsProblem = readBackfills(ctx, db, names)
	return s, nil
}

// readSlot fills s's WAL position, slot and failover figures.
func readSlot(ctx context.Context, db pgdb.Querier, names Names, s *DatabaseStats) error {
	var confirmed, restart pgtype.Text
	var active pgtype.Bool
	var walEnd string
	err := db.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text, s.confirmed_flush_lsn::text, s.restart_lsn::text, s.active
		FROM (SELECT 1) one LEFT JOIN pg_replication_slots s ON s.slot_name = $1`, names.Slot).Scan(&walEnd, &confirmed, &restart, &active)
	if err != nil {
		return fmt.Errorf("read slot %q: %w", names.Slot, err)
	}
	if s.WALEnd, err = pglogrepl.ParseLSN(walEnd); err != nil {
		return fmt.Errorf("read the server's WAL position: %w", err)
	}
	if confirmed.Valid || restart.Valid || active.Valid {
		s.SlotExists, s.SlotActive = true, active.Bool
		if confirmed.Valid {
			s.Confirmed, _ = pglogrepl.ParseLSN(confirmed.String)
		}
		if restart.Valid {
			s.Restart, _ = pglogrepl.ParseLSN(restart.String)
		}
	}
	s.Failover, err = replication.LookupFailover(ctx, db, names.Slot)
	return err
}

// readPausedTopics reads the slot's paused topics from the pause table:
// Kafka's, and those of the other publishers. A table without the
// publisher column (migrated by a version before publishers) has
// Kafka's alone.
func readPausedTopics(ctx context.Context, db pgdb.Querier, names Names) ([]string, []PublisherTopic, error) {
	table := pgx.Identifier{names.CheckpointSchema, migrations.PauseTable}.Sanitize()
	rows, _ := db.Query(ctx, "SELECT publisher, topic FROM "+table+" WHERE slot_name = $1 ORDER BY publisher <> 'kafka', publisher, topic", names.Slot)
	paused, err := pgx.CollectRows(rows, pgx.RowToStructByPos[PublisherTopic])
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42703" { // undefined_column: before publishers
		rows, _ = db.Query(ctx, "SELECT 'kafka', topic FROM "+table+" WHERE slot_name = $1 ORDER BY topic", names.Slot)
		paused, err = pgx.CollectRows(rows, pgx.RowToStructByPos[PublisherTopic])
	}
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read the paused topics in %s: %w", table, err)
	}
	var kafka []string
	var others []PublisherTopic
	for _, p := range paused {
		if p.Publisher == "kafka" {
			kafka = append(kafka, p.Topic)
		} else {
			others = append(others, p)
		}
	}
	return kafka, others, nil
}

// readPausedIn reads the topics the teams paused in their progress
// tables. A table that cannot be read is left out: the relay's start
// and check-config say what is wrong with it.
func readPausedIn(ctx context.Context, db pgdb.Querier, names Names) []TopicPausedIn {
	var out []TopicPausedIn
	for _, p := range names.PausedIn {
		rows, _ := db.Query(ctx, "SELECT DISTINCT x.topic FROM ("+p.Select+") AS x(topic) ORDER BY 1")
		topics, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			continue
		}
		for _, topic := range topics {
			tp := TopicPausedIn{Topic: topic, Table: p.Table}
			if p.Publisher != "kafka" {
				tp.Publisher = p.Publisher
			}
			out = append(out, tp)
		}
	}
	return out
}

// MaxHeldTopics is the most topics DatabaseStats.Topics lists: those with
// the most held events.
const MaxHeldTopics = 100

// TopicHeld is what the status table holds of one topic's events: the
// rows in each held state, and how long ago the oldest was parked.
type TopicHeld struct {
	Topic string `json:"topic"`
	// Failed rows are retried by the poller; Dead rows wait for an
	// operator; Waiting rows are parked behind an earlier held event of
	// their key; Paused rows wait for their topic's resume.
	Failed  int64 `json:"failed"`
	Dead    int64 `json:"dead"`
	Waiting int64 `json:"waiting"`
	Paused  int64 `json:"paused"`
	// OldestHeldSeconds is the age of the topic's oldest held row (by its
	// created_at), as of the reading.
	OldestHeldSeconds float64 `json:"oldest_held_seconds"`
}

// Held is the topic's held rows in every state.
func (t TopicHeld) Held() int64 { return t.Failed + t.Dead + t.Waiting + t.Paused }

// heldQuery counts the held rows of the status table (%s) per topic and
// state, with the totals over every topic as window sums, taken before the
// limit. Its WHERE is the predicate of the status table's partial index on
// the held states.
//
// A DEAD row an operator skipped (skipped_at set) is not held: it counts
// nowhere.
const heldQuery = `SELECT topic, failed, dead, waiting, paused, extract(epoch FROM now() - oldest)::float8,
	sum(failed) OVER ()::bigint, sum(dead) OVER ()::bigint, sum(waiting) OVER ()::bigint, sum(paused) OVER ()::bigint, count(*) OVER (),
	coalesce(extract(epoch FROM now() - min(owed) OVER ())::float8, 0)
FROM (SELECT topic,
		count(*) FILTER (WHERE status = 'FAILED') AS failed,
		count(*) FILTER (WHERE status = 'DEAD') AS dead,
		count(*) FILTER (WHERE status = 'WAITING') AS waiting,
		count(*) FILTER (WHERE status = 'PAUSED') AS paused,
		min(created_at) AS oldest,
		min(created_at) FILTER (WHERE status <> 'DEAD') AS owed
	FROM %s WHERE status IN ('FAILED', 'DEAD', 'WAITING', 'PAUSED') AND skipped_at IS NULL
	GROUP BY topic) held
ORDER BY failed + dead + waiting + paused DESC, topic
LIMIT %d`

// readHeld fills s's held counts, over every topic and for the topics
// with the most held rows, from one query, and their HeldAt.
func readHeld(ctx context.Context, db pgdb.Querier, names Names, s *DatabaseStats) error {
	status := pgx.Identifier{names.StatusSchema, names.StatusTable}.Sanitize()
	s.HeldAt = time.Now()
	return statusError("count parked events", status, scanHeld(ctx, db, fmt.Sprintf(heldQuery, status, MaxHeldTopics), s))
}

// readChurn fills s's StatusFile and StatusChurn: what tells a TRUNCATE
// of the status table.
func readChurn(ctx context.Context, db pgdb.Querier, names Names, s *DatabaseStats) error {
	status := pgx.Identifier{names.StatusSchema, names.StatusTable}.Sanitize()
	err := db.QueryRow(ctx, `SELECT coalesce(pg_relation_filenode($1::regclass), 0)::bigint,
		pg_stat_get_tuples_updated($1::regclass) + pg_stat_get_tuples_deleted($1::regclass)`, status).Scan(&s.StatusFile, &s.StatusChurn)
	return statusError("read the status table's statistics", status, err)
}

// statusError is err, of doing what on the status table, saying what to
// do when the table is missing or not migrated; nil when err is.
func statusError(what, status string, err error) error {
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &pgErr) && pgErr.Code == "42P01":
		return fmt.Errorf("%s: the status table %s does not exist: run `cdc-relay migrate` with the same table flags", what, status)
	case errors.As(err, &pgErr) && pgErr.Code == "42703":
		return fmt.Errorf("%s: the status table %s was not migrated since the upgrade (%s): "+
			"run `cdc-relay migrate` of this version with the same table flags", what, status, pgErr.Message)
	}
	return fmt.Errorf("%s in %s: %w", what, status, err)
}

// scanHeld runs heldQuery and fills s from its rows; once read, s.Topics
// is a list, empty when nothing is held.
func scanHeld(ctx context.Context, db pgdb.Querier, query string, s *DatabaseStats) error {
	rows, err := db.Query(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	s.Topics = []TopicHeld{}
	for rows.Next() {
		var t TopicHeld
		if err := rows.Scan(&t.Topic, &t.Failed, &t.Dead, &t.Waiting, &t.Paused, &t.OldestHeldSeconds,
			&s.Failed, &s.Dead, &s.Waiting, &s.Paused, &s.HeldTopics, &s.OldestOwedSeconds); err != nil {
			return err
		}
		s.Topics = append(s.Topics, t)
	}
	return rows.Err()
}
