package sink

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/decoder"
)

func TestPermanent(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{kerr.MessageTooLarge, true},
		{kerr.InvalidTopicException, true},
		{kerr.TopicAuthorizationFailed, true},
		{kerr.UnknownTopicOrPartition, true}, // only reaches the callback after the client's unknown-topic retries
		{fmt.Errorf("produce: %w", kerr.RecordListTooLarge), true},
		{kerr.CorruptMessage, true}, // retriable to Kafka, but franz-go fails the record
		{fmt.Errorf("%w (uncompressed_bytes=10, compressed_bytes=10)", kerr.MessageTooLarge), true},
		{errors.New("an error franz-go gave up on"), true}, // never in flight forever
		{kgo.ErrClientClosed, false},
		{context.Canceled, false},
		{fmt.Errorf("produce: %w", context.DeadlineExceeded), false},
	}
	for _, tt := range tests {
		if got := Permanent(tt.err); got != tt.want {
			t.Errorf("Permanent(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestProducerRefused(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{kerr.ClusterAuthorizationFailed, true},
		{fmt.Errorf("produce: %w", kerr.SaslAuthenticationFailed), true},
		{kerr.TopicAuthorizationFailed, false}, // one topic: park its events
		{kerr.MessageTooLarge, false},
		{errors.New("an error franz-go gave up on"), false},
		{nil, false},
	} {
		if got := ProducerRefused(tt.err); got != tt.want {
			t.Errorf("ProducerRefused(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestTooLargeAndCause(t *testing.T) {
	tests := []struct {
		err      error
		tooLarge bool
		cause    string
	}{
		{fmt.Errorf("%w (uncompressed_bytes=2000123)", kerr.MessageTooLarge), true, "MESSAGE_TOO_LARGE"},
		{kerr.RecordListTooLarge, true, "RECORD_LIST_TOO_LARGE"},
		{kerr.TopicAuthorizationFailed, false, "TOPIC_AUTHORIZATION_FAILED"},
		{errors.New(`illegal topic "bad topic!*": only ASCII letters`), false, "illegal topic"},
		{errors.New("headers column is not a JSON object"), false, "headers column is not a JSON object"},
	}
	for _, tt := range tests {
		if got := TooLarge(tt.err); got != tt.tooLarge {
			t.Errorf("TooLarge(%v) = %v, want %v", tt.err, got, tt.tooLarge)
		}
		if got := Cause(tt.err); got != tt.cause {
			t.Errorf("Cause(%v) = %q, want %q", tt.err, got, tt.cause)
		}
	}
}

func TestFill(t *testing.T) {
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ev := &decoder.Event{
		Topic: "t", Key: []byte("k"), Value: []byte("v"), Timestamp: ts,
		Headers: []decoder.Header{{Key: "id", Value: []byte("1")}, {Key: "n", Value: nil}},
	}
	r := &kgo.Record{}
	Fill(r, nil, ev)
	if r.Topic != "t" || string(r.Key) != "k" || string(r.Value) != "v" || !r.Timestamp.Equal(ts) {
		t.Fatalf("record %+v", r)
	}
	if len(r.Headers) != 2 || r.Headers[0].Key != "id" || string(r.Headers[0].Value) != "1" || r.Headers[1].Value != nil {
		t.Fatalf("headers %+v", r.Headers)
	}
}

// BenchmarkFill fills a record and its headers in place, as the relay does.
func BenchmarkFill(b *testing.B) {
	ev := &decoder.Event{Topic: "outbox.event.order", Key: []byte("key-42"), Value: make([]byte, 300),
		Headers: []decoder.Header{{Key: "id", Value: []byte("5f0c1a5e")}, {Key: "event_type", Value: []byte("OrderPlaced")},
			{Key: "aggregate_type", Value: []byte("order")}, {Key: "aggregate_id", Value: []byte("key-42")}}}
	var r kgo.Record
	var hdrs [4]kgo.RecordHeader
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		Fill(&r, hdrs[:0], ev)
	}
	if len(r.Headers) != 4 {
		b.Fatal(r.Headers)
	}
}

// TestCauseOfABadTopicIsNotTheTopic: a topic the relay refuses gives a
// cause that carries nothing of the row (neither the name nor its length):
// each cause is a log line of its own, so causes made from rows would grow
// without bound, one per row.
func TestCauseOfABadTopicIsNotTheTopic(t *testing.T) {
	check, err := decoder.DefaultMapping().TopicCheck()
	if err != nil {
		t.Fatal(err)
	}
	for _, names := range [][]string{
		{strings.Repeat("a", 250), strings.Repeat("b", 300), strings.Repeat("c", 10000)},
		{"bad topic", "x/y", "orders\x00"},
		{"_schemas", "__consumer_offsets", "connect-configs"},
		{".", ".."},
	} {
		var causes []string
		for _, name := range names {
			reason := check(name)
			if reason == nil {
				t.Fatalf("topic %.20q allowed, want it refused", name)
			}
			causes = append(causes, Cause(reason))
		}
		for i, c := range causes {
			if c != causes[0] || strings.Contains(c, names[i]) || strings.ContainsAny(c, "0123456789") {
				t.Errorf("causes %q of topics like %.20q: want one cause, without the name or its length", causes, names[0])
				break
			}
		}
	}
}

// TestErrorName: metric labels come from a fixed set, never the error's
// text.
func TestErrorName(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{kerr.MessageTooLarge, "MESSAGE_TOO_LARGE"},
		{fmt.Errorf("produce: %w", kerr.UnknownTopicOrPartition), "UNKNOWN_TOPIC_OR_PARTITION"},
		{kgo.ErrClientClosed, "CLIENT_CLOSED"},
		{context.Canceled, "CANCELED"},
		{context.DeadlineExceeded, "TIMEOUT"},
		{errors.New(`topic "orders-42" is invalid: some detail`), "OTHER"},
	} {
		if got := ErrorName(tt.err); got != tt.want {
			t.Errorf("ErrorName(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}
