package audit

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/sink"
)

// TestReadRecordsWindow: the Kafka reader reads each partition from the
// first offset at or after Since less Margin (the timestamp index) to the
// first at or after Until plus Margin, skips a transaction's markers and
// aborted records, ends though the last offset before the end is an
// aborted record's, and tells the topics that do not exist.
func TestReadRecordsWindow(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	base := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := range 20 { // one a minute, alternating partitions
		recs = append(recs, &kgo.Record{Topic: "t", Partition: int32(i % 2), Timestamp: base.Add(time.Duration(i) * time.Minute),
			Headers: []kgo.RecordHeader{{Key: "id", Value: fmt.Appendf(nil, "%d", i)}}})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	abortedTail(ctx, t, c.ListenAddrs(), base.Add(30*time.Minute))

	for _, tc := range []struct {
		name         string
		since, until time.Time
		want         []string
	}{
		{"everything", time.Time{}, time.Time{}, ids(0, 20)},
		{"from the index", base.Add(10 * time.Minute), time.Time{}, ids(8, 20)},
		{"a window", base.Add(10 * time.Minute), base.Add(12 * time.Minute), ids(8, 14)}, // to the first at 14 min, not it
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newTopicRecords(Config{Kafka: sink.Config{Brokers: c.ListenAddrs()}, Since: tc.since, Until: tc.until, Margin: 2 * time.Minute})
			var got, absent []string
			err := k.ReadRecords(ctx, []string{"t", "nowhere"}, Reads{
				Absent: func(t string) { absent = append(absent, t) },
				Total:  func(int64) {},
				See:    func(r Record) { got = append(got, string(r.ID)) },
			})
			if err != nil {
				t.Fatal(err)
			}
			slices.SortFunc(got, func(a, b string) int { return cmp.Or(cmp.Compare(len(a), len(b)), cmp.Compare(a, b)) })
			if !slices.Equal(got, tc.want) || !slices.Equal(absent, []string{"nowhere"}) {
				t.Errorf("read %v (absent %v), want %v", got, absent, tc.want)
			}
		})
	}
}

// ids are "from" … "to-1".
func ids(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprint(i))
	}
	return out
}

// abortedTail writes a record to each partition of t in a transaction
// that aborts, at ts: the partitions end with an aborted record and its
// marker.
func abortedTail(ctx context.Context, t *testing.T, brokers []string, ts time.Time) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.TransactionalID("audit-test"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for p := range int32(2) {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Partition: p, Timestamp: ts, Headers: []kgo.RecordHeader{{Key: "id", Value: []byte("aborted")}}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
}
