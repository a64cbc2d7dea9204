package poller

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/sink"
	"github.com/cdc-relay/cdc-relay/status"
)

// fakeStore hands out rows once and keeps the outcomes.
type fakeStore struct {
	rows     []status.Row
	outcomes []status.Outcome
}

func (f *fakeStore) Claim(ctx context.Context, limit int, deliver func(context.Context, []status.Row) []status.Outcome) (int, error) {
	rows := f.rows[:min(limit, len(f.rows))]
	f.rows = f.rows[len(rows):]
	f.outcomes = append(f.outcomes, deliver(ctx, rows)...)
	return len(rows), nil
}

// fakeProducer answers each record by topic.
type fakeProducer struct {
	errs     map[string]error // by topic; missing: delivered
	produced []*kgo.Record
}

func (f *fakeProducer) ProduceWait(_ context.Context, recs []*kgo.Record) []error {
	out := make([]error, len(recs))
	for i, r := range recs {
		f.produced = append(f.produced, r)
		out[i] = f.errs[r.Topic]
	}
	return out
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

func TestDeliver(t *testing.T) {
	t.Parallel()
	row := func(id int64, topic string, attempts int) status.Row {
		return status.Row{ID: id, EventID: "e", Topic: topic, Key: []byte("k"), Value: []byte(`{}`), Attempts: attempts,
			CommitLSN: 0x1A2B, Headers: []decoder.Header{{Key: "id", Value: []byte("e")}}}
	}
	from := func(source string, r status.Row) status.Row {
		r.SourceTable = source
		return r
	}
	tests := []struct {
		name    string
		row     status.Row
		errs    map[string]error
		want    status.Outcome // ID is the row's
		waitMin time.Duration  // for a failure: next attempt at least this far
		waitMax time.Duration
		none    bool // no outcome: not an attempt
		refused bool // never produced: a topic the relay must not write
	}{
		{name: "delivered", row: row(1, "orders", 0), want: status.Outcome{Delivered: true}},
		{name: "first failure waits the base", row: row(2, "missing", 0), errs: map[string]error{"missing": kerr.UnknownTopicOrPartition},
			want: status.Outcome{Err: kerr.UnknownTopicOrPartition}, waitMin: 800 * time.Millisecond, waitMax: 1200 * time.Millisecond},
		{name: "fourth failure waits 8 bases", row: row(3, "missing", 3), errs: map[string]error{"missing": kerr.UnknownTopicOrPartition},
			want: status.Outcome{Err: kerr.UnknownTopicOrPartition}, waitMin: 6400 * time.Millisecond, waitMax: 9600 * time.Millisecond},
		{name: "capped at the max", row: row(4, "missing", 8), errs: map[string]error{"missing": kerr.UnknownTopicOrPartition},
			want: status.Outcome{Err: kerr.UnknownTopicOrPartition}, waitMin: 48 * time.Second, waitMax: 72 * time.Second},
		{name: "last attempt: dead", row: row(5, "missing", 9), errs: map[string]error{"missing": kerr.UnknownTopicOrPartition},
			want: status.Outcome{Dead: true, Err: kerr.UnknownTopicOrPartition}},
		{name: "not a Kafka topic: never produced", row: row(6, "bad topic!*", 0), refused: true,
			want: status.Outcome{Err: errors.New("not a topic")}, waitMin: 800 * time.Millisecond, waitMax: 1200 * time.Millisecond},
		{name: "no answer in time: not an attempt", row: row(7, "slow", 0), errs: map[string]error{"slow": context.DeadlineExceeded}, none: true},
		{name: "a topic --allowed-topics refuses: never produced", row: row(8, "_schemas", 0), refused: true,
			want: status.Outcome{Err: errors.New("not allowed")}, waitMin: 800 * time.Millisecond, waitMax: 1200 * time.Millisecond},
		{name: "checked by its own source's allowed topics", row: from("message:audit", row(9, "audit.login", 0)), want: status.Outcome{Delivered: true}},
		{name: "a topic its own source refuses: never produced", row: from("message:audit", row(10, "orders", 0)), refused: true,
			want: status.Outcome{Err: errors.New("not allowed")}, waitMin: 800 * time.Millisecond, waitMax: 1200 * time.Millisecond},
	}
	tableCheck, err := decoder.DefaultMapping().TopicCheck()
	if err != nil {
		t.Fatal(err)
	}
	auditCheck, err := decoder.Mapping{AllowedTopics: `audit\..*`}.TopicCheck()
	if err != nil {
		t.Fatal(err)
	}
	check := func(source, topic string) error {
		if source == "message:audit" {
			return auditCheck(topic)
		}
		return tableCheck(topic)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &fakeStore{rows: []status.Row{tt.row}}
			prod := &fakeProducer{errs: tt.errs}
			p := New(store, prod, Config{RetryBase: time.Second, RetryMax: time.Minute, MaxAttempts: 10, CheckTopic: check})
			if n, err := p.RunOnce(context.Background()); n != 1 || err != nil {
				t.Fatalf("RunOnce = %d, %v", n, err)
			}
			if tt.none {
				if len(store.outcomes) != 0 {
					t.Fatalf("outcomes %+v, want none", store.outcomes)
				}
				return
			}
			if len(store.outcomes) != 1 {
				t.Fatalf("outcomes %+v, want one", store.outcomes)
			}
			o := store.outcomes[0]
			if o.ID != tt.row.ID || o.Delivered != tt.want.Delivered || o.Dead != tt.want.Dead || (o.Err == nil) != (tt.want.Err == nil) {
				t.Fatalf("outcome %+v, want %+v", o, tt.want)
			}
			if tt.waitMax > 0 {
				if wait := o.RetryIn; wait < tt.waitMin || wait > tt.waitMax {
					t.Fatalf("next attempt in %s, want %s to %s", wait, tt.waitMin, tt.waitMax)
				}
			}
			if tt.refused {
				if len(prod.produced) != 0 {
					t.Fatalf("produced to a topic the relay must not write")
				}
				return
			}
			r := prod.produced[0]
			if got := header(r, HeaderAttempts); got != strconv.Itoa(tt.row.Attempts+1) {
				t.Errorf("%s header %q, want %d", HeaderAttempts, got, tt.row.Attempts+1)
			}
			if got := header(r, HeaderCommitLSN); got != "0/1A2B" {
				t.Errorf("%s header %q, want 0/1A2B", HeaderCommitLSN, got)
			}
			if got := header(r, "id"); got != "e" {
				t.Errorf("original header id %q, want e", got)
			}
		})
	}
}

// TestDeadLetter: a row marked DEAD also goes to the dead-letter topic,
// with its error and original topic in headers; if that topic refuses it
// too, the row says so.
func TestDeadLetter(t *testing.T) {
	t.Parallel()
	for _, dlqErr := range []error{nil, kerr.TopicAuthorizationFailed} {
		store := &fakeStore{rows: []status.Row{{ID: 9, Topic: "orders", Value: []byte(`{}`), Attempts: 2}}}
		prod := &fakeProducer{errs: map[string]error{"orders": kerr.MessageTooLarge, "dead": dlqErr}}
		p := New(store, prod, Config{MaxAttempts: 3, DeadLetterTopic: "dead"})
		if _, err := p.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		o := store.outcomes[0]
		if !o.Dead {
			t.Fatalf("outcome %+v, want dead", o)
		}
		dl := prod.produced[1]
		if dl.Topic != "dead" || header(dl, HeaderOriginalTopic) != "orders" || header(dl, HeaderError) != kerr.MessageTooLarge.Error() {
			t.Fatalf("dead-letter record %s headers %v", dl.Topic, dl.Headers)
		}
		if !errors.Is(o.Err, kerr.MessageTooLarge) {
			t.Fatalf("last error %q lost the cause", o.Err)
		}
		if said := strings.Contains(o.Err.Error(), `dead-letter topic "dead" refused it`); said != (dlqErr != nil) {
			t.Fatalf("last error %q; the dead-letter topic refused it: %v", o.Err, dlqErr != nil)
		}
	}
}

// countingStore counts its claims, which find nothing, and says when
// each happened.
type countingStore struct {
	mu     sync.Mutex
	claims []time.Time
}

func (c *countingStore) Claim(ctx context.Context, limit int, deliver func(context.Context, []status.Row) []status.Outcome) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.claims = append(c.claims, time.Now())
	return 0, nil
}

func (c *countingStore) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.claims)
}

// TestRunLooksAgainWhenARowIsDue: after a claim that was not full, Run
// looks again when Config.NextDue says the next row is due, sooner than
// Config.Interval; without a row due it waits the interval.
func TestRunLooksAgainWhenARowIsDue(t *testing.T) {
	t.Parallel()
	store := &countingStore{}
	var due atomic.Bool
	due.Store(true)
	cfg := DefaultConfig()
	cfg.Interval = time.Hour
	cfg.NextDue = func(context.Context) (time.Duration, bool, error) {
		return 50 * time.Millisecond, due.Swap(false), nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); New(store, &fakeProducer{}, cfg).Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for store.count() < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // polls the fake's count
	}
	if n := store.count(); n != 2 {
		t.Fatalf("%d claims within 10 s, want 2: the second when the row is due, 50 ms after the first", n)
	}
	store.mu.Lock()
	gap := store.claims[1].Sub(store.claims[0])
	store.mu.Unlock()
	if gap < 40*time.Millisecond {
		t.Fatalf("the second claim came %s after the first, want once the row is due (50 ms)", gap)
	}
	cancel()
	<-done
	if n := store.count(); n != 2 {
		t.Fatalf("%d claims, want no third within the hour's interval: no row is due", n)
	}
}

func TestRunLooksAgainWhenWoken(t *testing.T) {
	t.Parallel()
	store := &countingStore{}
	wake := make(chan struct{})
	cfg := DefaultConfig()
	cfg.Interval = time.Hour
	cfg.Wake = wake
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); New(store, &fakeProducer{}, cfg).Run(ctx) }()
	for want := 2; want <= 3; want++ {
		select {
		case wake <- struct{}{}: // received only once Run waits for its next look
		case <-time.After(10 * time.Second):
			t.Fatalf("the poller did not wait for a wake within 10 s after %d claims", store.count())
		}
		deadline := time.Now().Add(10 * time.Second)
		for store.count() < want && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond) // polls the fake's count
		}
		if n := store.count(); n != want {
			t.Fatalf("%d claims within 10 s of wake %d, want %d: each wake is a look, the interval an hour", n, want-1, want)
		}
	}
	cancel()
	<-done
	if n := store.count(); n != 3 {
		t.Fatalf("%d claims, want 3: one at the start, one per wake", n)
	}
}

// TestRecordCommitLSN: a record carries its event's commit position, and a
// row the relay did not read from the WAL (adopted, or reset: its
// CommitLSN unknown, 0) carries none rather than 0/0.
func TestRecordCommitLSN(t *testing.T) {
	for _, tc := range []struct {
		lsn    pglogrepl.LSN
		header string // "" for none
	}{{0x1A2B, "0/1A2B"}, {0, ""}} {
		r := record(status.Row{Topic: "t", Key: []byte("k"), CommitLSN: tc.lsn, Reload: tc.lsn == 0}, "t")
		got, found := "", false
		for _, h := range r.Headers {
			if h.Key == HeaderCommitLSN {
				got, found = string(h.Value), true
			}
		}
		if got != tc.header || found != (tc.header != "") {
			t.Errorf("commit LSN %v: header %q (there: %v), want %q", tc.lsn, got, found, tc.header)
		}
	}
}

// TestRecordPlaced: the record of a row placed by its table's partition
// column goes to that partition (sink.Place); not on the dead-letter
// topic, and not a row left to its key's hash.
func TestRecordPlaced(t *testing.T) {
	row := status.Row{Topic: "orders", Key: []byte("k"), Placed: true, Partition: 5}
	for _, c := range []struct {
		name   string
		row    status.Row
		topic  string
		placed bool
	}{
		{"placed", row, "orders", true},
		{"to the dead-letter topic", row, "dead-letters", false},
		{"not placed", status.Row{Topic: "orders", Key: []byte("k")}, "orders", false},
	} {
		r := record(c.row, c.topic)
		p, ok := sink.PlacedOf(r)
		if ok != c.placed || ok && p != 5 {
			t.Errorf("%s: placed %t on %d, want %t on 5", c.name, ok, p, c.placed)
		}
	}
}
