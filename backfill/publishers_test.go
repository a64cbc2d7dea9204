package backfill

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// fakeProducer answers each record by its value: fail[v] errors for the
// first n tries (n < 0: always), else nil; it keeps what it was sent.
type fakeProducer struct {
	mu   sync.Mutex
	fail map[string]struct {
		err error
		n   int
	}
	tries map[string]int
	sent  []string // the values, in the order sent
}

func (f *fakeProducer) ProduceWait(_ context.Context, recs []*kgo.Record) []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.tries == nil {
		f.tries = map[string]int{}
	}
	errs := make([]error, len(recs))
	for i, r := range recs {
		v := string(r.Value)
		f.sent = append(f.sent, v)
		f.tries[v]++
		if e, ok := f.fail[v]; ok && (e.n < 0 || f.tries[v] <= e.n) {
			errs[i] = e.err
		}
	}
	return errs
}

var errLater = fmt.Errorf("the receiver answered 500: %w", context.DeadlineExceeded)

// TestFanOut: each record goes to Kafka and to each publisher whose
// topics it is of; a publisher's record the receiver may take later is
// sent again, in order, until taken; a refusal is the record's outcome,
// and stops the tries; Kafka's error is the record's.
func TestFanOut(t *testing.T) {
	t.Parallel()
	type fails = map[string]struct {
		err error
		n   int
	}
	refused := errors.New("HTTP 422")
	tests := []struct {
		name                string
		kafka, hook         fails
		want                []string // each record's outcome: "" or the error
		wantKafka, wantHook []string // what each was sent, in order
	}{
		{name: "every one taken", want: []string{"", "", ""},
			wantKafka: []string{"w1", "p1"}, wantHook: []string{"w1", "h1"}},
		{name: "the receiver fails twice, then takes them", hook: fails{"w1": {errLater, 2}},
			want: []string{"", "", ""}, wantKafka: []string{"w1", "p1"}, wantHook: []string{"w1", "h1", "w1", "w1"}},
		{name: "a refusal", hook: fails{"h1": {refused, -1}, "w1": {errLater, 1}},
			want: []string{errLater.Error(), "", refused.Error()}, wantKafka: []string{"w1", "p1"}, wantHook: []string{"w1", "h1"}},
		{name: "Kafka refuses", kafka: fails{"p1": {refused, -1}},
			want: []string{"", refused.Error(), ""}, wantKafka: []string{"w1", "p1"}, wantHook: []string{"w1", "h1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			kafka, hook := &fakeProducer{fail: tc.kafka}, &fakeProducer{fail: tc.hook}
			f := &fanOut{kafka: kafka, kafkaSends: func(topic string) bool { return topic != "hooks-only" },
				pubs: []Publisher{{Name: "partner", Producer: hook, Sends: func(topic string) bool { return topic != "payments" }}},
				log:  func(string, ...any) {}}
			recs := []*kgo.Record{{Topic: "wallet", Value: []byte("w1")}, {Topic: "payments", Value: []byte("p1")}, {Topic: "hooks-only", Value: []byte("h1")}}
			errs := f.ProduceWait(context.Background(), recs)
			for i, err := range errs {
				if got := fmt.Sprint(err); err == nil && tc.want[i] != "" || err != nil && got != tc.want[i] {
					t.Errorf("record %d: %v, want %q", i, err, tc.want[i])
				}
			}
			if !slices.Equal(kafka.sent, tc.wantKafka) || !slices.Equal(hook.sent, tc.wantHook) {
				t.Errorf("Kafka was sent %q, the webhook %q; want %q and %q", kafka.sent, hook.sent, tc.wantKafka, tc.wantHook)
			}
		})
	}
}

// TestFanOutStops: records the receiver keeps failing are tried again
// until the backfill stops (ctx ends), and keep their error.
func TestFanOutStops(t *testing.T) {
	t.Parallel()
	hook := &fakeProducer{fail: map[string]struct {
		err error
		n   int
	}{"w1": {errLater, -1}}}
	ctx, cancel := context.WithCancel(context.Background())
	f := &fanOut{kafka: &fakeProducer{}, pubs: []Publisher{{Name: "partner", Producer: hook, Sends: func(string) bool { return true }}},
		log: func(string, ...any) { cancel() }} // the outage's line, then a stop
	errs := f.ProduceWait(ctx, []*kgo.Record{{Topic: "wallet", Value: []byte("w1")}})
	if !errors.Is(errs[0], context.DeadlineExceeded) {
		t.Fatalf("a record the receiver never took: %v, want its error", errs[0])
	}
}
