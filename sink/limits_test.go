package sink

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// sizedRecord returns a record of topic whose batch of its own is exactly
// size bytes (BatchBytesAlone).
func sizedRecord(t *testing.T, topic string, size int) *kgo.Record {
	t.Helper()
	r := &kgo.Record{Topic: topic, Key: []byte("k"), Headers: []kgo.RecordHeader{{Key: "id", Value: []byte("1")}}}
	for n := max(0, size-100); ; n++ {
		r.Value = bytes.Repeat([]byte("v"), n)
		switch got := BatchBytesAlone(r); {
		case got == size:
			return r
		case got > size:
			t.Fatalf("no record of %d bytes", size)
		}
	}
}

// TestRefusesWhatKafkaRefuses: Refuses says MESSAGE_TOO_LARGE for exactly
// the records that producing would fail so (kfake applies a topic's
// max.message.bytes; franz-go the batch limit), and nothing when no limit
// of the topic is known.
func TestRefusesWhatKafkaRefuses(t *testing.T) {
	const small, plain = "small", "plain"
	const topicLimit, batchLimit = 2000, 4096
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, plain))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if _, err := kadm.NewClient(adm).CreateTopic(ctx, 1, 1, map[string]*string{"max.message.bytes": kadm.StringPtr(strconv.Itoa(topicLimit))}, small); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, codec, topic string
		size               int
		refused            string // in Refuses' error; "" for none
	}{
		{"at the topic's limit", "", small, topicLimit, ""},
		{"over the topic's limit", "", small, topicLimit + 1, "topic small's max.message.bytes of 2000 bytes"},
		{"over the topic's limit, compressed", "zstd", small, topicLimit + 1, ""}, // compressed, it fits
		{"at the batch limit", "", plain, batchLimit - 4, ""},
		{"over the batch limit", "", plain, batchLimit - 3, "producer batch limit of 4096 bytes: raise --kafka-batch-max-bytes"},
		{"over the batch limit, compressed", "zstd", plain, batchLimit - 3, "producer batch limit"},
		{"a topic that does not exist", "", "missing", topicLimit + 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(Config{Brokers: kc.ListenAddrs(), BatchMaxBytes: batchLimit, Compression: tt.codec})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			r := sizedRecord(t, tt.topic, tt.size)
			err = s.Refuses(r)
			if tt.refused == "" {
				if err != nil {
					t.Fatalf("Refuses = %v, want nil", err)
				}
			} else if !errors.Is(err, kerr.MessageTooLarge) || !strings.Contains(err.Error(), tt.refused) {
				t.Fatalf("Refuses = %v, want MESSAGE_TOO_LARGE with %q", err, tt.refused)
			}
			if tt.topic == "missing" {
				return
			}
			perr := s.ProduceWait(ctx, []*kgo.Record{r})[0]
			if (perr != nil) != (tt.refused != "") || perr != nil && !errors.Is(perr, kerr.MessageTooLarge) {
				t.Fatalf("producing it: %v; Refuses said %v", perr, err)
			}
		})
	}
}

// TestRefusesLearnsANewLimit: after Kafka refused a record of a topic
// (SizeRefused), the topic's new max.message.bytes applies.
func TestRefusesLearnsANewLimit(t *testing.T) {
	const topic = "t"
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := New(Config{Brokers: kc.ListenAddrs()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := sizedRecord(t, topic, 3000)
	if err := s.Refuses(r); err != nil {
		t.Fatalf("under the default limit: %v", err)
	}
	if _, err := kadm.NewClient(s.cl).AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "max.message.bytes", Value: kadm.StringPtr("2000")}}, topic); err != nil {
		t.Fatal(err)
	}
	s.SizeRefused(topic)
	for s.Refuses(r) == nil {
		if ctx.Err() != nil {
			t.Fatal("the new limit was never applied")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestBatchesFitTheTopic: once the sink knows a topic's max.message.bytes
// (Refuses described it before its first record), its batches stay within
// it, so that Kafka never refuses a batch of records that each fit.
func TestBatchesFitTheTopic(t *testing.T) {
	const topic = "small"
	kc, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := New(Config{Brokers: kc.ListenAddrs(), Linger: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := kadm.NewClient(s.cl).CreateTopic(ctx, 1, 1, map[string]*string{"max.message.bytes": kadm.StringPtr("2000")}, topic); err != nil {
		t.Fatal(err)
	}
	recs := make([]*kgo.Record, 200)
	for i := range recs {
		recs[i] = sizedRecord(t, topic, 200)
		if err := s.Refuses(recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	for i, err := range s.ProduceWait(ctx, recs) {
		if err != nil {
			t.Fatalf("record %d of 200 small ones: %v", i, err)
		}
	}
}

// TestTopicLimitsSayARefusedDescription: Kafka refusing to describe a
// topic (the principal's ACLs) is told once per topic, so that the
// operator learns its records' sizes go unchecked; a broker that does not
// answer is not told as a refusal.
func TestTopicLimitsSayARefusedDescription(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want int
	}{
		{"refused", kerr.TopicAuthorizationFailed, 1},
		{"no answer", context.DeadlineExceeded, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var told atomic.Int32
			l := &topicLimits{
				describe: func(context.Context, string) (int, bool, error) { return 0, false, tt.err },
				failed:   func(string, error) { told.Add(1) },
			}
			if got := l.get("orders"); got != 0 {
				t.Fatalf("limit %d, want none known", got)
			}
			l.forget("orders")
			l.get("orders") // described again in the background
			deadline := time.Now().Add(5 * time.Second)
			busy := func() bool { v, _ := l.byTopic.Load("orders"); return v.(*topicLimit).busy.Load() }
			for busy() && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if got := int(told.Load()); got != tt.want {
				t.Errorf("told %d times, want %d", got, tt.want)
			}
		})
	}
}

// BenchmarkRefuses is the size check's cost per record of the stream: a
// 300-byte record with three headers, its topic's limit known.
func BenchmarkRefuses(b *testing.B) {
	s := &Sink{batchMax: DefaultBatchMaxBytes, limits: &topicLimits{
		describe: func(context.Context, string) (int, bool, error) { return 1 << 20, true, nil }}}
	r := &kgo.Record{Topic: "outbox.event.order", Key: []byte("key-42"), Value: bytes.Repeat([]byte("x"), 300),
		Headers: []kgo.RecordHeader{{Key: "id", Value: []byte("123456")}, {Key: "eventType", Value: []byte("OrderPlaced")}, {Key: "aggregateType", Value: []byte("order")}}}
	if err := s.Refuses(r); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Refuses(r); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRefusesNowSeesARaisedLimit: a record its topic's cached limit
// refuses is refused by Refuses until the cache expires, but RefusesNow
// (the poller's retry) describes the topic again first, so that a limit
// the operator raised lets it go at once.
func TestRefusesNowSeesARaisedLimit(t *testing.T) {
	for _, tt := range []struct {
		name  string
		after func(s *Sink) // between the raise and RefusesNow
	}{
		{"a retry a second later", func(s *Sink) {
			v, _ := s.limits.byTopic.Load("orders")
			v.(*topicLimit).described.Store(time.Now().Add(-2 * time.Second).UnixNano())
		}},
		{"a retry at once", func(s *Sink) {
			if err := s.RefusesNow(&kgo.Record{Topic: "orders", Value: bytes.Repeat([]byte("x"), 5000)}); err == nil {
				t.Fatal("RefusesNow described the topic again within a second of its last description")
			}
			s.LimitsMayHaveChanged() // the operator's retry wakes the relay
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var limit atomic.Int64
			limit.Store(1000)
			s := &Sink{batchMax: DefaultBatchMaxBytes, limits: &topicLimits{
				describe: func(context.Context, string) (int, bool, error) { return int(limit.Load()), true, nil }}}
			r := &kgo.Record{Topic: "orders", Value: bytes.Repeat([]byte("x"), 5000)}
			if err := s.Refuses(r); !errors.Is(err, kerr.MessageTooLarge) {
				t.Fatalf("Refuses = %v, want MESSAGE_TOO_LARGE under a limit of 1000", err)
			}
			limit.Store(1 << 20) // the operator raises max.message.bytes
			if err := s.Refuses(r); err == nil {
				t.Fatal("Refuses let the record go before its cached limit expired")
			}
			tt.after(s)
			if err := s.RefusesNow(r); err != nil {
				t.Fatalf("RefusesNow = %v, want nil: the topic's limit was raised", err)
			}
		})
	}
}
