package backfill

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/republish"
)

// Header is the header every record of a backfill carries, its value the
// backfill's run id (Config.RunID): consumers may tell a backfill's
// records from the stream's, and one backfill's from another's, or ignore
// it.
const Header = "cdc-relay-backfill"

// publisher returns the publisher of the backfill's rows through snk, as
// the stream makes them records, with the backfill's header, and its
// topic instead of the mapping's when one is given (Config.TopicOverride).
// It parks nothing: a row that cannot become a record is logged with its
// key and counted as skipped, and a record Kafka or a publisher refuses
// ends the backfill, naming its row's key.
func (b *backfiller) publisher(snk republish.Producer) *republish.Publisher {
	pub := republish.New(snk, republish.Options{
		Topic:   b.cfg.TopicOverride,
		Headers: []kgo.RecordHeader{{Key: Header, Value: []byte(b.cfg.RunID)}},
		Logger:  b.cfg.Logger,
	})
	t := republish.Table{Rows: b.rows, Name: b.q.table}
	if len(b.cfg.Publishers) > 0 || b.cfg.KafkaSends != nil {
		t.Sends = sendsAny(b.cfg.KafkaSends, b.cfg.Publishers) // a record of no publisher's topic is not made
	}
	pub.Begin(t)
	return pub
}

// add hands one row, values in the text format, to pub, with its key.
func (b *backfiller) add(ctx context.Context, pub *republish.Publisher, values [][]byte) error {
	key := make([]string, len(b.keyAt))
	for i, at := range b.keyAt {
		key[i] = string(values[at])
	}
	return pub.Add(ctx, values, FormatKey(key))
}
