package backfill

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/sink"
)

// Header is the header every record of a backfill carries, its value the
// backfill's run id (Config.RunID): consumers may tell a backfill's
// records from the stream's, and one backfill's from another's, or ignore
// it.
const Header = "cdc-relay-backfill"

// batch is one batch of rows as Kafka records.
type batch struct {
	recs    []*kgo.Record
	rowOf   []int      // recs[i] is of row rowOf[i]
	keys    [][]string // each row's key, in key order
	skipped int64      // rows that cannot become records
}

// reset empties b for the next batch.
func (b *batch) reset() {
	b.recs, b.rowOf, b.keys, b.skipped = b.recs[:0], b.rowOf[:0], b.keys[:0], 0
}

// recorder makes rows records through the table's mapping, as the stream
// does, with the backfill's header, and its topic instead of the
// mapping's when one is given.
type recorder struct {
	rows   *decoder.Rows
	keyAt  []int  // the field of each key column
	topic  string // Config.TopicOverride
	header kgo.RecordHeader
	table  string
	log    *slog.Logger
}

// add appends one row, values in the text format, to b: one record per
// topic (a routed table's matching routes, or the override's one topic),
// none for a row that cannot become a record, which is logged and counted.
func (r *recorder) add(b *batch, values [][]byte) {
	key := make([]string, len(r.keyAt))
	for i, at := range r.keyAt {
		key[i] = string(values[at])
	}
	b.keys = append(b.keys, key)
	row := len(b.keys) - 1
	msg := r.rows.Decode(values, 0)
	if msg.Poison != nil {
		b.skipped++
		r.log.Warn("row skipped: it cannot become a record (the relay parks such a row DEAD)", "table", r.table, "key", FormatKey(key), "err", msg.Poison)
		return
	}
	ev := msg.Event
	for _, topic := range r.topics(msg) {
		ev.Topic = topic
		rec := &kgo.Record{}
		sink.Fill(rec, make([]kgo.RecordHeader, 0, len(ev.Headers)+1), &ev)
		rec.Headers = append(rec.Headers, r.header)
		b.recs, b.rowOf = append(b.recs, rec), append(b.rowOf, row)
	}
}

// topics are the topics of msg's records: the override's, else the
// routes a routed row matched (none if none), else its topic.
func (r *recorder) topics(msg decoder.Message) []string {
	switch {
	case r.topic != "":
		return []string{r.topic}
	case msg.Routed:
		return slices.Clone(msg.Routes)
	}
	return []string{msg.Event.Topic}
}

// produce produces b's records and waits for Kafka to acknowledge each,
// or returns the first refusal, naming its row.
func produce(ctx context.Context, snk *sink.Sink, b *batch) error {
	for i, err := range snk.ProduceWait(ctx, b.recs) {
		if err == nil {
			continue
		}
		key := FormatKey(b.keys[b.rowOf[i]])
		if sink.Permanent(err) {
			return fmt.Errorf("Kafka refuses the record of the row with key %s for topic %q: %w; fix the cause, then resume", key, b.recs[i].Topic, err)
		}
		return fmt.Errorf("the record of the row with key %s for topic %q was not acknowledged: %w", key, b.recs[i].Topic, err)
	}
	return nil
}
