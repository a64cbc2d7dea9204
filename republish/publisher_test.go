package republish

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/fatal"
)

// The columns of the test table (text, text, text, text, text[]).
var (
	colNames = []string{"id", "key", "payload", "topic", "tags"}
	colTypes = []uint32{25, 25, 25, 25, 1009}
)

// rowsOf decodes rows of the test table through m.
func rowsOf(t *testing.T, m decoder.Mapping) *decoder.Rows {
	t.Helper()
	m.Schema, m.Table, m.IDColumn, m.KeyColumn, m.PayloadColumn = "public", "outbox", "id", "key", "payload"
	if len(m.Routes) == 0 {
		m.TopicColumn = "topic"
	}
	dec, err := decoder.New(m)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := dec.Rows(colNames, colTypes)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// row is a row of the test table in the text format.
func row(id, topic, tags string) [][]byte {
	return [][]byte{[]byte(id), []byte("k-" + id), []byte(`{"n":1}`), []byte(topic), []byte(tags)}
}

// producer answers each record with answer's error for it, and keeps the
// batches it was given.
type producer struct {
	answer  func(*kgo.Record) error
	batches [][]*kgo.Record
}

func (p *producer) ProduceWait(_ context.Context, recs []*kgo.Record) []error {
	p.batches = append(p.batches, slices.Clone(recs))
	errs := make([]error, len(recs))
	for i, r := range recs {
		if p.answer != nil {
			errs[i] = p.answer(r)
		}
	}
	return errs
}

// parker keeps what it parked, as "DEAD id" or "FAILED id topic".
type parker struct{ parked []string }

func (p *parker) Dead(_ context.Context, ev *decoder.Event, _ error) error {
	p.parked = append(p.parked, "DEAD "+string(ev.ID))
	return nil
}

func (p *parker) Failed(_ context.Context, ev *decoder.Event, _ error) error {
	p.parked = append(p.parked, "FAILED "+string(ev.ID)+" "+ev.Topic)
	return nil
}

// TestPublisherParks: with a parker, a row that cannot become a record
// is parked DEAD as it is added, a record Kafka refuses for good FAILED,
// the acknowledged rows' ids are written back after each flush, and a
// batch is flushed once it holds FlushAt records.
func TestPublisherParks(t *testing.T) {
	ctx := context.Background()
	prod := &producer{answer: func(r *kgo.Record) error {
		if r.Topic == "refused" {
			return kerr.MessageTooLarge
		}
		return nil
	}}
	park := &parker{}
	var written [][]string
	pub := New(prod, Options{Park: park, CommitLSN: 42, FlushAt: 2})
	pub.Begin(Table{Rows: rowsOf(t, decoder.Mapping{}), Index: 3, Name: "t",
		Written: func(_ context.Context, ids []string) error { written = append(written, slices.Clone(ids)); return nil }})
	for _, r := range [][][]byte{row("1", "a", ""), row("2", "__consumer_offsets", ""), row("3", "refused", ""), row("4", "b", ""), row("5", "c", "")} {
		if err := pub.Add(ctx, r, ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := pub.Counts(), (Counts{Rows: 5, Published: 3, Parked: 2}); got != want {
		t.Errorf("counts %+v, want %+v", got, want)
	}
	if want := []string{"DEAD 2", "FAILED 3 refused"}; !slices.Equal(park.parked, want) {
		t.Errorf("parked %v, want %v", park.parked, want)
	}
	if got := batchSizes(prod.batches); !slices.Equal(got, []int{2, 2, 0}) {
		t.Errorf("batches of %v records, want 2, 2 (FlushAt), then the last flush's none", got)
	}
	if got := strings.Join(flat(written), ","); got != "1,4,5" {
		t.Errorf("written back %v, want 1, 4, 5", written)
	}
}

// TestPublisherEndsOnProducerRefused: a producer Kafka refuses ends the
// publish with a fatal.Error, parking nothing, and an error that
// is not for good ends it as not published.
func TestPublisherEndsOnProducerRefused(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		err  error
		want string
	}{
		{kerr.ClusterAuthorizationFailed, "Kafka refuses the relay's producer: "},
		{context.Canceled, "publish outbox row: context canceled"},
	} {
		park := &parker{}
		pub := New(&producer{answer: func(*kgo.Record) error { return tc.err }}, Options{Park: park})
		pub.Begin(Table{Rows: rowsOf(t, decoder.Mapping{})})
		if err := pub.Add(ctx, row("1", "a", ""), ""); err != nil {
			t.Fatal(err)
		}
		err := pub.Flush(ctx)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || fatal.Is(err) != errors.Is(tc.err, kerr.ClusterAuthorizationFailed) {
			t.Errorf("%v: flush = %v, want %q", tc.err, err, tc.want)
		}
		if len(park.parked) != 0 || pub.Counts().Published != 0 {
			t.Errorf("%v: parked %v, counts %+v; want none", tc.err, park.parked, pub.Counts())
		}
	}
}

// TestPublisherFansOutByRoute: a routed row makes one record per route it
// matches, none when it matches none, and none of a topic whose events go
// to other publishers only (Table.Sends); a topic given makes one record
// per row; the extra headers follow the mapping's.
func TestPublisherFansOutByRoute(t *testing.T) {
	ctx := context.Background()
	m := decoder.Mapping{TagsColumn: "tags", Routes: []decoder.Route{{Topic: "orders", AnyOfTags: []string{"order"}}, {Topic: "audit", AnyOfTags: []string{"order", "user"}}}}
	for _, tc := range []struct {
		topic string
		sends func(string) bool
		want  []string
	}{
		{"", nil, []string{"orders", "audit", "audit"}},
		{"override", nil, []string{"override", "override", "override"}},
		{"", func(topic string) bool { return topic != "audit" }, []string{"orders"}}, // audit goes to a webhook alone
	} {
		prod := &producer{}
		pub := New(prod, Options{Topic: tc.topic, Headers: []kgo.RecordHeader{{Key: "extra", Value: []byte("x")}}})
		pub.Begin(Table{Rows: rowsOf(t, m), Sends: tc.sends})
		for _, r := range [][][]byte{row("1", "", "{order}"), row("2", "", "{user}"), row("3", "", "{other}")} {
			if err := pub.Add(ctx, r, ""); err != nil {
				t.Fatal(err)
			}
		}
		if err := pub.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		var topics []string
		for _, r := range prod.batches[0] {
			topics = append(topics, r.Topic)
			if h := r.Headers; len(h) == 0 || h[len(h)-1].Key != "extra" || string(r.Key) != "k-"+string(headerOf(h, "id")) {
				t.Errorf("record %q: headers %v: want the id, then extra", r.Key, h)
			}
		}
		if !slices.Equal(topics, tc.want) {
			t.Errorf("topic %q: records for %v, want %v", tc.topic, topics, tc.want)
		}
	}
}

// TestPublisherWithoutPark: without a parker, a row that cannot become a
// record is skipped and counted, and a record Kafka does not acknowledge
// ends the publish with an error naming its row's key.
func TestPublisherWithoutPark(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		err  error
		want string
	}{
		{kerr.MessageTooLarge, `Kafka refuses the record of the row with key 7 for topic "a": `},
		{publisherRefusal{}, `publisher partner refuses the record of the row with key 7 for topic "a": HTTP 422`},
		{context.Canceled, `the record of the row with key 7 for topic "a" was not acknowledged: context canceled`},
	} {
		pub := New(&producer{answer: func(*kgo.Record) error { return tc.err }}, Options{})
		pub.Begin(Table{Rows: rowsOf(t, decoder.Mapping{})})
		if err := pub.Add(ctx, row("6", "__consumer_offsets", ""), "6"); err != nil {
			t.Fatal(err)
		}
		if err := pub.Add(ctx, row("7", "a", ""), "7"); err != nil {
			t.Fatal(err)
		}
		if got, want := pub.Counts(), (Counts{Rows: 2, Skipped: 1}); got != want {
			t.Errorf("counts %+v, want %+v", got, want)
		}
		if err := pub.Flush(ctx); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%v: flush = %v, want %q", tc.err, err, tc.want)
		}
	}
}

func batchSizes(bs [][]*kgo.Record) []int {
	var n []int
	for _, b := range bs {
		n = append(n, len(b))
	}
	return n
}

func flat(ss [][]string) []string {
	var all []string
	for _, s := range ss {
		all = append(all, s...)
	}
	return all
}

func headerOf(hs []kgo.RecordHeader, key string) []byte {
	for _, h := range hs {
		if h.Key == key {
			return h.Value
		}
	}
	return nil
}

// TestPublisherPoisonOfAWebhookOnlyTable: recover's Kafka publisher of a
// table whose events go to a webhook alone (NotKafkas) parks none of its
// poison rows for Kafka: the webhook's adoption takes them (its poller
// parks them DEAD for the webhook); of another table, it parks them.
func TestPublisherPoisonOfAWebhookOnlyTable(t *testing.T) {
	ctx := context.Background()
	for _, notKafkas := range []bool{true, false} {
		park := &parker{}
		pub := New(&producer{}, Options{Park: park})
		pub.Begin(Table{Rows: rowsOf(t, decoder.Mapping{}), Name: "t", Sends: func(string) bool { return !notKafkas }, NotKafkas: notKafkas})
		for _, r := range [][][]byte{row("1", "a", ""), row("2", "__consumer_offsets", "")} {
			if err := pub.Add(ctx, r, ""); err != nil {
				t.Fatal(err)
			}
		}
		if err := pub.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if got := len(park.parked) > 0; got == notKafkas {
			t.Errorf("NotKafkas %v: parked for Kafka %v", notKafkas, park.parked)
		}
	}
}

// publisherRefusal is a webhook publisher's refusal, as its lanes say it.
type publisherRefusal struct{}

func (publisherRefusal) Error() string         { return "HTTP 422" }
func (publisherRefusal) FromPublisher() string { return "partner" }
