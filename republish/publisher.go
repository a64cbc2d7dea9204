package republish

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/fatal"
	"github.com/cdc-relay/cdc-relay/sink"
)

// Producer produces records and waits for Kafka's answer to each, as
// [sink.Sink.ProduceWait] does: errs[i] is recs[i]'s outcome, or the
// context's error for a record still unanswered when it ended.
type Producer interface {
	ProduceWait(ctx context.Context, recs []*kgo.Record) []error
}

// Parker parks the events that cannot be delivered, as [status.Store]
// does: Dead for a row that cannot become a record, Failed for a record
// Kafka refused for good.
type Parker interface {
	Dead(ctx context.Context, ev *decoder.Event, reason error) error
	Failed(ctx context.Context, ev *decoder.Event, reason error) error
}

// Options configures a [Publisher] for the whole of its run.
type Options struct {
	// Park, if set, parks what cannot be delivered and counts it in
	// Counts.Parked: a row that cannot become a record (DEAD), a record
	// Kafka refuses for good (FAILED). Nil parks nothing: such a row is
	// skipped, logged with its key and counted in Counts.Skipped, and a
	// record Kafka refuses ends Flush with an error naming its row's key.
	Park Parker
	// CommitLSN is the position every event carries (the status table
	// keeps it with a parked event).
	CommitLSN uint64
	// Topic, if set, is the topic of every record instead of the
	// mapping's: one record per row, routes or not.
	Topic string
	// Headers are added to every record, after the mapping's.
	Headers []kgo.RecordHeader
	// FlushAt, if positive, makes Add flush once the batch holds that
	// many records or more; zero leaves every flush to the caller.
	FlushAt int
	// LogFlushes logs the counts after each flush of records.
	LogFlushes bool
	// Logger receives the skipped rows and the flushes' counts; nil
	// discards them.
	Logger *slog.Logger
}

// Table is what the rows of one outbox table need: see [Publisher.Begin].
type Table struct {
	// Rows decodes the table's rows (decoder.Decoder.Rows with the
	// columns of the query that reads them: see [Columns]).
	Rows *decoder.Rows
	// Index is the table's index in the relay's list of tables, set on
	// every event (decoder.Event.Table): the status table names it so.
	Index int
	// Name is the table, for the log.
	Name string
	// Written, if set, is told the event ids of each flush's rows that
	// Kafka acknowledged (rows without an id are left out), to write them
	// back as delivered.
	Written func(ctx context.Context, ids []string) error
	// Sends, if set, reports whether the table's events of a topic go to
	// the Producer (recover's: Kafka; backfill's: Kafka or a publisher
	// beside it): a record of a topic it refuses is not made (its events
	// go to other publishers only, or to none).
	Sends func(topic string) bool
	// NotKafkas is true when none of the table's events go to Kafka: a
	// row that cannot become a record is not parked for Kafka either (the
	// publishers' own parking sees it).
	NotKafkas bool
}

// Counts are what a [Publisher] did since it was made.
type Counts struct {
	// Rows are the rows added; Published the records Kafka acknowledged
	// (a routed row makes one per matching route); Parked the events
	// parked (Options.Park); Skipped the rows that could not become
	// records, without Options.Park.
	Rows, Published, Parked, Skipped int
}

// Publisher turns rows into records and produces them a batch at a time,
// waiting for Kafka's answers: see the package's guarantees. It is not
// safe for concurrent use.
type Publisher struct {
	snk    Producer
	opts   Options
	t      Table
	counts Counts
	events []decoder.Event
	recs   []*kgo.Record
	keys   []string // the key of each record's row, for the errors without Park
	acked  []string
}

// New returns a publisher that produces through snk.
func New(snk Producer, opts Options) *Publisher {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Publisher{snk: snk, opts: opts}
}

// Begin makes the rows Add takes from now on those of t. The batch should
// be empty (flushed): its records keep the table they were added with,
// but Written is t's at the next flush.
func (p *Publisher) Begin(t Table) { p.t = t }

// Counts returns what p did so far.
func (p *Publisher) Counts() Counts { return p.counts }

// Columns are the names and type OIDs of a query's fields, as
// [decoder.Decoder.Rows] takes them.
func Columns(fields []pgconn.FieldDescription) (names []string, types []uint32) {
	names, types = make([]string, len(fields)), make([]uint32, len(fields))
	for i, f := range fields {
		names[i], types[i] = f.Name, f.DataTypeOID
	}
	return names, types
}

// Add decodes one row of the table Begin named, values in the text
// format, into the batch: one record per topic (Options.Topic's, else the
// routes a routed row matches, none if none, else the mapping's topic).
// A row that cannot become a record is parked DEAD, or skipped and
// logged with key, the row's key for the operator (empty for none). With
// Options.FlushAt, Add flushes a batch that reached it.
func (p *Publisher) Add(ctx context.Context, values [][]byte, key string) error {
	p.counts.Rows++
	msg := p.t.Rows.Decode(values, p.opts.CommitLSN)
	ev := msg.Event
	ev.Table = p.t.Index // the decoder knows one table only
	ev.Headers = slices.Clone(ev.Headers)
	if msg.Poison != nil {
		if p.t.NotKafkas {
			return nil
		}
		return p.poison(ctx, &ev, msg.Poison, key)
	}
	for _, topic := range p.topics(msg) {
		if p.t.Sends != nil && !p.t.Sends(topic) {
			continue
		}
		ev.Topic = topic
		rec := &kgo.Record{}
		var hdrs []kgo.RecordHeader
		if len(p.opts.Headers) > 0 {
			hdrs = make([]kgo.RecordHeader, 0, len(ev.Headers)+len(p.opts.Headers))
		}
		sink.Fill(rec, hdrs, &ev)
		if ev.Placed {
			sink.Place(rec, ev.Partition)
		}
		rec.Headers = append(rec.Headers, p.opts.Headers...)
		p.events, p.recs, p.keys = append(p.events, ev), append(p.recs, rec), append(p.keys, key)
	}
	if p.opts.FlushAt > 0 && len(p.recs) >= p.opts.FlushAt {
		return p.Flush(ctx)
	}
	return nil
}

// poison parks ev, which cannot become a record, DEAD, or skips it.
func (p *Publisher) poison(ctx context.Context, ev *decoder.Event, poison error, key string) error {
	if p.opts.Park == nil {
		p.counts.Skipped++
		p.opts.Logger.Warn("row skipped: it cannot become a record (the relay parks such a row DEAD)", "table", p.t.Name, "key", key, "err", poison)
		return nil
	}
	if err := p.opts.Park.Dead(ctx, ev, poison); err != nil {
		return fmt.Errorf("park event: %w", err)
	}
	p.counts.Parked++
	return nil
}

// topics are the topics of msg's records: Options.Topic, else the routes
// a routed row matched (none if none), else its topic.
func (p *Publisher) topics(msg decoder.Message) []string {
	switch {
	case p.opts.Topic != "":
		return []string{p.opts.Topic}
	case msg.Routed:
		return msg.Routes // one record per route; none when no route matched
	}
	return []string{msg.Event.Topic}
}

// Flush produces the batch and waits for Kafka's answer to each record:
// it counts what Kafka acknowledged, parks what it refuses for good (with
// Options.Park), hands the acknowledged ids to Table.Written, and empties
// the batch. An error leaves the batch as it is: the publish ends.
func (p *Publisher) Flush(ctx context.Context) error {
	errs := p.snk.ProduceWait(ctx, p.recs)
	p.acked = p.acked[:0]
	for i, err := range errs {
		if err == nil {
			p.counts.Published++
			if p.events[i].ID != nil {
				p.acked = append(p.acked, string(p.events[i].ID))
			}
			continue
		}
		if err := p.refused(ctx, i, err); err != nil {
			return err
		}
	}
	if len(p.acked) > 0 && p.t.Written != nil {
		if err := p.t.Written(ctx, p.acked); err != nil {
			return fmt.Errorf("write back the rows published again: %w", err)
		}
	}
	if len(p.recs) > 0 && p.opts.LogFlushes {
		p.opts.Logger.Info("published again", "rows", p.counts.Rows, "published", p.counts.Published, "parked", p.counts.Parked)
	}
	p.events, p.recs, p.keys = p.events[:0], p.recs[:0], p.keys[:0]
	return nil
}

// refused parks the record i, which Kafka did not acknowledge (err),
// when it refused it for good and Options.Park is set; else it returns
// the error that ends the publish.
func (p *Publisher) refused(ctx context.Context, i int, err error) error {
	if p.opts.Park == nil {
		var pe interface{ FromPublisher() string } // a publisher's beside Kafka (a webhook's lanes)
		switch {
		case errors.As(err, &pe) && sink.Permanent(err):
			return fmt.Errorf("publisher %s refuses the record of the row with key %s for topic %q: %w; fix the cause, then resume", pe.FromPublisher(), p.keys[i], p.recs[i].Topic, err)
		case sink.Permanent(err):
			return fmt.Errorf("Kafka refuses the record of the row with key %s for topic %q: %w; fix the cause, then resume", p.keys[i], p.recs[i].Topic, err)
		}
		return fmt.Errorf("the record of the row with key %s for topic %q was not acknowledged: %w", p.keys[i], p.recs[i].Topic, err)
	}
	switch {
	case sink.ProducerRefused(err):
		// Every record would fail the same way: parking each of them would
		// only move the rows into the status table.
		return fatal.Error{Err: fmt.Errorf("Kafka refuses the relay's producer: %w", err)}
	case sink.Permanent(err):
		if err := p.opts.Park.Failed(ctx, &p.events[i], err); err != nil {
			return fmt.Errorf("park event for topic %q: %w", p.events[i].Topic, err)
		}
		p.counts.Parked++
		return nil
	}
	return fmt.Errorf("publish outbox row: %w", err)
}
