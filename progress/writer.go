package progress

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
	"github.com/cdc-relay/cdc-relay/internal/pgerr"
	"github.com/cdc-relay/cdc-relay/internal/tick"
)

// Head is the oldest event of a topic the relay has not delivered yet
// (see Config.Heads).
type Head struct {
	Topic string
	// Position is its outbox row's id; ok false when the id is not an
	// integer (a row of another table): the topic's position then waits.
	Position int64
	ok       bool
	// Failing is true while it failed (to be tried again, or given up
	// on); Attempts and LastError are then its failed deliveries and the
	// last one's error.
	Failing   bool
	Attempts  int
	LastError string
}

// NewHead returns the head of topic whose outbox row's id is eventID.
func NewHead(topic, eventID string, failing bool, attempts int, lastError string) Head {
	pos, err := strconv.ParseInt(eventID, 10, 64)
	return Head{Topic: topic, Position: pos, ok: err == nil, Failing: failing, Attempts: attempts, LastError: lastError}
}

// Config configures a [Writer].
type Config struct {
	// Table is the progress table, as [Check] returned it.
	Table Table
	// Source is the outbox table whose positions it follows.
	Source Source
	// Every is how often the writer samples and writes. Default 1s.
	Every time.Duration
	// Saved is the checkpoint row's position: every transaction that
	// committed before it is delivered, or held in the status table.
	Saved func() pglogrepl.LSN
	// Held returns those of topics that have an event not delivered yet
	// (status.Store.TopicsHeld): cheap, asked every round.
	Held func(ctx context.Context, topics []string) ([]string, error)
	// Heads returns the head of each of topics that has an event not
	// delivered yet (status.Store.Heads): it may cost a scan of many held
	// rows, and is asked only as often as headsEvery allows.
	Heads func(ctx context.Context, topics []string) ([]Head, error)
	// Log receives what the writer could not do; nil discards it.
	Log *slog.Logger
}

// A Writer keeps a team's progress table true while the relay runs:
// each (topic, publisher) row's position is the highest position of the
// outbox table up to which every event of the topic was delivered, as
// far as the checkpoint row vouches; its error count and last error are
// those of the topic's first held event while it fails.
//
// A position is written only once the checkpoint row passed it: the
// writer samples, together, the highest id of the outbox table and the
// WAL position (an id visible then committed before that position), and
// writes the id once the checkpoint row is at or past the position. A
// topic with an event still held gets the position before that event's,
// at most. Positions only grow. An id taken by a transaction that
// commits later than a higher one's can be passed before it is
// delivered: the position says what the table's order had reached, as a
// poller reading by position would have.
type Writer struct {
	db      DB
	cfg     Config
	samples []sample // oldest first, at most maxSamples
	reached int64    // the highest id the checkpoint row passed
	known   bool     // reached is set
	heads   headCache
}

// headCache keeps the heads last read, so that a costly read is not made
// every round. A head read earlier is never further than the topic's
// head now (a held event delivered leaves a later head, or none, and
// the position it bounds only grows), so a stale one holds a position
// back, never past an event still held; a topic held now that had no
// head then is read again at once.
type headCache struct {
	heads map[string]Head
	at    time.Time
	cost  time.Duration // of the last read
}

// headsEvery is how much longer than it took a read of the heads waits
// before the next one, unless a topic newly held needs it: at most a
// twentieth of the database's time.
const headsEvery = 20

// sample is the highest id of the source at a WAL position.
type sample struct {
	lsn pglogrepl.LSN
	max int64
}

// maxSamples bounds the samples waiting for the checkpoint row: while it
// is that many intervals behind, no new one is taken.
const maxSamples = 64

// DB is what the writer needs of a connection pool (*pgxpool.Pool has
// it).
type DB interface {
	pgdb.Querier
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// NewWriter returns a writer on db, a pool.
func NewWriter(db DB, cfg Config) *Writer {
	if cfg.Every <= 0 {
		cfg.Every = time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Writer{db: db, cfg: cfg}
}

// Run writes every interval until ctx ends. A round that fails is logged
// and the next one tries again.
func (w *Writer) Run(ctx context.Context) {
	tick.Every(ctx, w.cfg.Every, func(ctx context.Context) bool {
		if err := w.Round(ctx); err != nil && ctx.Err() == nil {
			w.cfg.Log.Log(ctx, pgerr.Level(err), "could not write the progress table; trying again", "table", w.cfg.Table.Schema+"."+w.cfg.Table.Name, "err", err)
		}
		return true
	}, tick.Now())
}

// Round samples the outbox table, then writes each topic's row from the
// newest sample the checkpoint row passed. Run calls it every interval.
func (w *Writer) Round(ctx context.Context) error {
	if err := w.sample(ctx); err != nil {
		return err
	}
	w.promote()
	if !w.known {
		return nil
	}
	topics, err := w.topics(ctx)
	if err != nil || len(topics) == 0 {
		return err
	}
	heads, err := w.readHeads(ctx, topics)
	if err != nil {
		return err
	}
	return w.write(ctx, w.rows(topics, heads))
}

// readHeads returns the heads of the topics held now: those read last,
// unless a topic held now has none, or the last read is older than
// headsEvery times its cost (and the interval).
func (w *Writer) readHeads(ctx context.Context, topics []string) ([]Head, error) {
	held, err := w.cfg.Held(ctx, topics)
	if err != nil {
		return nil, err
	}
	c := &w.heads
	fresh := time.Since(c.at) < max(w.cfg.Every, headsEvery*c.cost)
	for _, topic := range held {
		if _, ok := c.heads[topic]; !ok {
			fresh = false
		}
	}
	if !fresh && len(held) > 0 {
		start := time.Now()
		read, err := w.cfg.Heads(ctx, held)
		if err != nil {
			return nil, err
		}
		c.heads, c.at, c.cost = make(map[string]Head, len(read)), time.Now(), time.Since(start)
		for _, h := range read {
			c.heads[h.Topic] = h
		}
	}
	out := make([]Head, 0, len(held))
	for _, topic := range held {
		if h, ok := c.heads[topic]; ok {
			out = append(out, h)
		}
	}
	return out, nil
}

// sample adds the outbox table's highest id with the WAL position after
// it: read in one statement, the id in its snapshot, the position after,
// so that the transaction of every id it sees committed before the
// position.
func (w *Writer) sample(ctx context.Context) error {
	if len(w.samples) >= maxSamples {
		return nil
	}
	src := w.cfg.Source
	var max *int64
	var text string
	err := w.db.QueryRow(ctx, "SELECT (SELECT max("+ident(src.IDColumn)+") FROM "+pgx.Identifier{src.Schema, src.Name}.Sanitize()+")::bigint, pg_current_wal_insert_lsn()::text").
		Scan(&max, &text)
	if err != nil {
		return fmt.Errorf("read the highest id of %s.%s: %w", src.Schema, src.Name, err)
	}
	lsn, err := pglogrepl.ParseLSN(text)
	if err != nil || max == nil {
		return err
	}
	w.samples = append(w.samples, sample{lsn: lsn, max: *max})
	return nil
}

// promote takes the samples the checkpoint row passed.
func (w *Writer) promote() {
	saved := w.cfg.Saved()
	n := 0
	for n < len(w.samples) && w.samples[n].lsn <= saved {
		w.reached, w.known = max(w.reached, w.samples[n].max), true
		n++
	}
	w.samples = w.samples[n:]
}

// topics are the topics to write: the routes', and those of the
// publisher's rows.
func (w *Writer) topics(ctx context.Context) ([]string, error) {
	t := w.cfg.Table
	rows, _ := w.db.Query(ctx, "SELECT DISTINCT "+ident(t.TopicColumn)+"::text FROM "+t.QuotedName()+
		" WHERE "+ident(t.PublisherColumn)+"::text = $1 AND "+ident(t.TopicColumn)+" IS NOT NULL", t.Publisher)
	have, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read the topics of publisher %q in %s.%s: %w", t.Publisher, t.Schema, t.Name, err)
	}
	seen := make(map[string]bool, len(have))
	for _, topic := range have {
		seen[topic] = true
	}
	for _, topic := range w.cfg.Source.Topics {
		if !seen[topic] {
			seen[topic] = true
			have = append(have, topic)
		}
	}
	return have, nil
}

// row is what one topic's row is to say.
type row struct {
	topic    string
	position int64
	errors   int
	lastErr  *string
}

// rows are the rows of topics: the position reached, held before the
// topic's head if it has one.
func (w *Writer) rows(topics []string, heads []Head) []row {
	byTopic := make(map[string]Head, len(heads))
	for _, h := range heads {
		byTopic[h.Topic] = h
	}
	out := make([]row, 0, len(topics))
	for _, topic := range topics {
		r := row{topic: topic, position: w.reached}
		if h, ok := byTopic[topic]; ok {
			if !h.ok {
				continue
			}
			r.position = min(r.position, h.Position-1)
			if h.Failing {
				r.errors, r.lastErr = h.Attempts, &h.LastError
			}
		}
		out = append(out, r)
	}
	return out
}

// write adds the rows of the routes' topics that the table lacks, then
// updates each row that changes: its position, only ever higher, and
// its errors.
func (w *Writer) write(ctx context.Context, rows []row) error {
	t := w.cfg.Table
	topics, positions, errs, lastErrs := make([]string, len(rows)), make([]int64, len(rows)), make([]int32, len(rows)), make([]*string, len(rows))
	for i, r := range rows {
		topics[i], positions[i], errs[i], lastErrs[i] = r.topic, r.position, int32(r.errors), r.lastErr
	}
	values := "unnest($1::text[], $2::bigint[], $3::int[], $4::text[]) AS v(topic, position, errors, last_error)"
	b := &pgx.Batch{}
	if len(w.cfg.Source.Topics) > 0 {
		b.Queue("INSERT INTO "+t.QuotedName()+" ("+ident(t.TopicColumn)+", "+ident(t.PublisherColumn)+", "+ident(t.PositionColumn)+")"+
			" SELECT v.topic, $5, v.position FROM "+values+" WHERE v.topic = ANY($6::text[])"+
			" AND NOT EXISTS (SELECT 1 FROM "+t.QuotedName()+" AS p WHERE p."+ident(t.TopicColumn)+"::text = v.topic AND p."+ident(t.PublisherColumn)+"::text = $5)",
			topics, positions, errs, lastErrs, t.Publisher, w.cfg.Source.Topics)
	}
	b.Queue(w.updateSQL(values), topics, positions, errs, lastErrs, t.Publisher)
	if err := w.db.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("write the positions of publisher %q in %s.%s: %w", t.Publisher, t.Schema, t.Name, err)
	}
	return nil
}

// updateSQL is the UPDATE of the rows that change, from values.
func (w *Writer) updateSQL(values string) string {
	t := w.cfg.Table
	pos := "p." + ident(t.PositionColumn)
	grown := "GREATEST(" + pos + ", v.position)"
	set := []string{ident(t.PositionColumn) + " = " + grown}
	changed := []string{grown + " IS DISTINCT FROM " + pos}
	if c := t.PublishedAtColumn; c != "" {
		set = append(set, ident(c)+" = CASE WHEN "+grown+" IS DISTINCT FROM "+pos+" THEN now() ELSE p."+ident(c)+" END")
	}
	if c := t.ErrorCountColumn; c != "" {
		set = append(set, ident(c)+" = v.errors")
		changed = append(changed, "p."+ident(c)+" IS DISTINCT FROM v.errors")
	}
	if c := t.LastErrorColumn; c != "" {
		set = append(set, ident(c)+" = v.last_error")
		changed = append(changed, "p."+ident(c)+" IS DISTINCT FROM v.last_error")
	}
	if c := t.UpdatedAtColumn; c != "" {
		set = append(set, ident(c)+" = now()")
	}
	return "UPDATE " + t.QuotedName() + " AS p SET " + strings.Join(set, ", ") + " FROM " + values +
		" WHERE p." + ident(t.TopicColumn) + "::text = v.topic AND p." + ident(t.PublisherColumn) + "::text = $5 AND (" + strings.Join(changed, " OR ") + ")"
}
