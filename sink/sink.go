package sink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/decoder"
)

// Config configures the producer.
type Config struct {
	// Brokers are the seed brokers, host:port.
	Brokers []string
	// ClientID names the client in broker logs.
	ClientID string
	// Linger is how long a partition's batch may wait for more records.
	Linger time.Duration
	// MaxBufferedRecords and MaxBufferedBytes must be at least the relay's
	// in-flight limits, so that Produce never blocks the stream reader.
	MaxBufferedRecords, MaxBufferedBytes int
	// AutoCreateTopics asks the broker to create missing topics (the broker
	// must allow it too).
	AutoCreateTopics bool
	// Logger receives the client's warnings and errors; nil for none.
	Logger *slog.Logger
}

// Sink is an idempotent Kafka producer. It is safe for concurrent use.
type Sink struct {
	cl *kgo.Client
}

// New creates the producer. It does not wait for the brokers: records
// produced while they are unreachable wait and are retried.
func New(cfg Config) (*Sink, error) {
	if len(cfg.Brokers) == 0 {
		return nil, errors.New("no Kafka brokers configured")
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		// No record retry limit and no delivery timeout: a record that can
		// still succeed is retried until it does. Failing it instead would
		// bump the idempotent sequence and could reorder its key.
		kgo.RecordDeliveryTimeout(0),
		kgo.ProducerLinger(cfg.Linger),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	}
	if cfg.ClientID != "" {
		opts = append(opts, kgo.ClientID(cfg.ClientID))
	}
	if cfg.MaxBufferedRecords > 0 {
		opts = append(opts, kgo.MaxBufferedRecords(cfg.MaxBufferedRecords))
	}
	if cfg.MaxBufferedBytes > 0 {
		opts = append(opts, kgo.MaxBufferedBytes(cfg.MaxBufferedBytes))
	}
	if cfg.AutoCreateTopics {
		opts = append(opts, kgo.AllowAutoTopicCreation())
	}
	if cfg.Logger != nil {
		opts = append(opts, kgo.WithLogger(kgoLogger{cfg.Logger}))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("create Kafka client: %w", err)
	}
	return &Sink{cl: cl}, nil
}

// Fill sets r to the record for ev, appending the headers to hdrs (pass a
// slice with room for them to avoid an allocation). r shares ev's byte
// slices.
func Fill(r *kgo.Record, hdrs []kgo.RecordHeader, ev *decoder.Event) {
	r.Topic = ev.Topic
	r.Key = ev.Key
	r.Value = ev.Value
	r.Timestamp = ev.Timestamp
	if len(ev.Headers) > 0 {
		for _, h := range ev.Headers {
			hdrs = append(hdrs, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		r.Headers = hdrs
	}
}

// Produce sends r asynchronously; done is called once, from a producer
// goroutine, with nil when Kafka acked the record, or the error that failed
// it (see [Permanent]). Records of one partition complete in produce order.
// Produce blocks while the client's buffer is full; cancelling ctx unblocks
// it and fails the record, and every buffered record produced with ctx, with
// ctx's error (not [Permanent]: the WAL still has them).
func (s *Sink) Produce(ctx context.Context, r *kgo.Record, done func(*kgo.Record, error)) {
	s.cl.Produce(ctx, r, done)
}

// Ping checks that a broker answers.
func (s *Sink) Ping(ctx context.Context) error { return s.cl.Ping(ctx) }

// Close closes the client; records not yet acked fail with
// kgo.ErrClientClosed (not [Permanent]: the WAL still has them).
func (s *Sink) Close() { s.cl.Close() }

// Permanent reports whether err will fail again however often the record is
// retried: too large, invalid or unknown topic, not authorized. Those records
// belong in the status table. Retriable errors never reach the callback
// (they are retried without limit); a closed client or cancelled context is
// not permanent either: the record was simply not delivered.
func Permanent(err error) bool {
	if err == nil || errors.Is(err, kgo.ErrClientClosed) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return !ke.Retriable || ke == kerr.UnknownTopicOrPartition
	}
	return false
}

// kgoLogger adapts slog to franz-go's logger, at warn level and above.
type kgoLogger struct{ l *slog.Logger }

func (k kgoLogger) Level() kgo.LogLevel { return kgo.LogLevelWarn }

func (k kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	switch level {
	case kgo.LogLevelError:
		k.l.Error("kafka: "+msg, keyvals...)
	default:
		k.l.Warn("kafka: "+msg, keyvals...)
	}
}
