package sink

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"

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
	// Compression is the codec of every batch, one of [Compressions]; ""
	// is none.
	Compression string
	// BatchMaxBytes is the most bytes of records, before compression, in
	// one batch (see [Sink.BatchMaxBytes]); 0 is [DefaultBatchMaxBytes].
	// It must not exceed the brokers' message.max.bytes (or the topic's
	// max.message.bytes), or batches that reach it are refused and their
	// records produced again one at a time. See [CheckBatchMaxBytes].
	BatchMaxBytes int
	// MaxBufferedRecords and MaxBufferedBytes must be at least the relay's
	// in-flight limits, so that Produce never blocks the stream reader.
	MaxBufferedRecords, MaxBufferedBytes int
	// AutoCreateTopics asks the broker to create missing topics (the broker
	// must allow it too).
	AutoCreateTopics bool
	// Logger receives the client's own lines, all at debug level, and the
	// sink's warnings (ReadCheckpoint's skipped records); nil for none.
	Logger *slog.Logger
	// Outages, if set, is told of the client's failed and answered
	// requests and logs an outage once (see [Outages]); clients that share
	// it share its lines. Nil, with a Logger, makes one per client.
	Outages *Outages
	// Dial, if set, opens the connections to the brokers (the relay's sets
	// TCP keepalives); nil uses franz-go's dialer.
	Dial func(ctx context.Context, network, host string) (net.Conn, error)
	// TLS, if set, makes every connection TLS with this configuration,
	// over Dial's connection: each connection uses a clone, whose
	// ServerName, when empty, is the broker's host. Nil is plaintext.
	TLS *tls.Config
	// SASL, if set, authenticates every connection with this mechanism
	// (plain.Auth or scram.Auth from franz-go); nil authenticates none.
	SASL sasl.Mechanism
	// TransactionalID, if set, makes the producer transactional (see
	// [Sink.InitTransactions]): records are produced only between
	// [Sink.Begin] and [Sink.Commit]. Empty is the idempotent producer.
	TransactionalID string
	// TransactionTimeout is how long the broker lets a transaction stay
	// open before it aborts it; zero is [DefaultTransactionTimeout].
	TransactionTimeout time.Duration
}

// RecordBytes is roughly what a record counts against
// [Sink.BatchMaxBytes]: its key, value and headers, uncompressed.
func RecordBytes(r *kgo.Record) int {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return n
}

// Sink is an idempotent Kafka producer. It is safe for concurrent use.
type Sink struct {
	cl   *kgo.Client
	opts []kgo.Opt // the client's options, for the one-record client
	// base are the options of any client of the same brokers: the
	// connection, without the producer's transactional id.
	base  []kgo.Opt
	txnID string // the transactional id; empty for the idempotent producer

	aloneOnce sync.Once
	alone     *kgo.Client // produces one record per batch; see ProduceAlone
	aloneErr  error

	groupOnce sync.Once
	group     *kgo.Client // produces records again beside the stream; see ProduceGroup
	groupErr  error

	batchMax   int          // Config.BatchMaxBytes, or its default
	compressed bool         // batches are compressed: a topic's limit is Kafka's to apply
	limits     *topicLimits // the topics' max.message.bytes, for Refuses

	sasl     *saslWatch   // SASL requests that failed; nil without SASL
	saslName string       // the mechanism's name, for errors
	outages  *Outages     // nil without a Logger or Config.Outages
	log      *slog.Logger // Config.Logger, or one that discards
}

// New creates the producer. It does not wait for the brokers: records
// produced while they are unreachable wait and are retried.
func New(cfg Config) (*Sink, error) {
	if len(cfg.Brokers) == 0 {
		return nil, errors.New("no Kafka brokers configured")
	}
	opts, err := producerOpts(cfg)
	if err != nil {
		return nil, err
	}
	opts = append(opts, clientOpts(cfg)...)
	if cfg.Logger != nil && cfg.Outages == nil {
		cfg.Outages = NewOutages(cfg.Logger, cfg.Brokers)
	}
	s := &Sink{batchMax: cfg.batchMaxBytes(), compressed: cfg.Compression != "" && cfg.Compression != "none",
		outages: cfg.Outages, log: cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))}
	s.limits = &topicLimits{describe: s.describeMaxMessageBytes, failed: func(topic string, err error) {
		s.log.Info("could not read the topic's max.message.bytes: a record too large for it is refused by Kafka instead of parked before it is produced; "+
			"grant the relay's principal DESCRIBE_CONFIGS on the topic to have it checked", "topic", topic, "err", err)
	}}
	opts = append(opts, kgo.ProducerBatchMaxBytesFn(s.batchCap)) // after producerOpts' ProducerBatchMaxBytes
	if s.outages != nil {
		opts = append(opts, kgo.WithHooks(s.outages.hooks()))
	}
	opts = append(opts, s.connectionOpts(cfg)...)
	s.base = opts
	opts = s.transactionalOpts(cfg, opts)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("create Kafka client: %w", err)
	}
	s.cl, s.opts = cl, opts
	if s.outages != nil {
		s.outages.add(cl)
	}
	return s, nil
}

// clientOpts are cfg's optional client settings: the client id, the
// buffer's limits, topic creation and the logger (its lines at debug).
func clientOpts(cfg Config) []kgo.Opt {
	var opts []kgo.Opt
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
	return opts
}

// connectionOpts are how every connection is opened: cfg's dialer, TLS
// over it, and SASL, whose failures s then watches.
func (s *Sink) connectionOpts(cfg Config) []kgo.Opt {
	var opts []kgo.Opt
	dial := cfg.Dial
	if cfg.TLS != nil {
		if dial == nil {
			dial = (&net.Dialer{Timeout: dialTimeout}).DialContext
		}
		dial = tlsDialer(dial, cfg.TLS)
	}
	if dial != nil {
		opts = append(opts, kgo.Dialer(dial))
	}
	if cfg.SASL != nil {
		s.sasl, s.saslName = &saslWatch{}, cfg.SASL.Name()
		opts = append(opts, kgo.SASL(cfg.SASL), kgo.WithHooks(s.sasl))
	}
	return opts
}

// transactionalOpts returns base, and for a transactional producer its
// id and timeout after it in a new slice: base stays the options of any
// client of the same brokers.
func (s *Sink) transactionalOpts(cfg Config, base []kgo.Opt) []kgo.Opt {
	if cfg.TransactionalID == "" {
		return base
	}
	timeout := cfg.TransactionTimeout
	if timeout == 0 {
		timeout = DefaultTransactionTimeout
	}
	s.txnID = cfg.TransactionalID
	return append(base[:len(base):len(base)], kgo.TransactionalID(cfg.TransactionalID), kgo.TransactionTimeout(timeout))
}

// producerOpts are the producer's settings, the same for every client of
// cfg (the stream's, the one-record client, the transactional one):
// acks=all, idempotent, no delivery timeout, the linger, the batch size,
// the partitioner and the compression. An unknown codec or a batch size
// out of range is an error.
func producerOpts(cfg Config) ([]kgo.Opt, error) {
	codec, err := ParseCompression(cfg.Compression)
	if err != nil {
		return nil, err
	}
	if err := CheckBatchMaxBytes(cfg.BatchMaxBytes); err != nil {
		return nil, err
	}
	return []kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		// No record retry limit and no delivery timeout: a record that can
		// still succeed is retried until it does. Failing it instead would
		// bump the idempotent sequence and could reorder its key.
		kgo.RecordDeliveryTimeout(0),
		kgo.ProducerLinger(cfg.Linger),
		kgo.ProducerBatchMaxBytes(int32(cfg.batchMaxBytes())),
		kgo.RecordPartitioner(partitioner()),
		// A topic that does not exist fails its records after 4 metadata
		// loads (franz-go's unknown-topic retries), at most one a second:
		// about 5 s in flight instead of about 25 s with the default.
		kgo.MetadataMinAge(time.Second),
		kgo.ProducerBatchCompression(codec),
	}, nil
}

// Fill sets r to the record for ev, appending the headers to hdrs (pass a
// slice with room for them to avoid an allocation). r shares ev's byte
// slices. It leaves r's Context alone: a placed event's record (ev.Placed)
// is then placed by [Place], once its Context is set.
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
// it and fails the record with ctx's error (not [Permanent]: the WAL still
// has it). franz-go then fails every record buffered behind it in its
// partition too, whatever their contexts: so all records of one Sink must
// share one context, which ends only when none of them is wanted any more.
func (s *Sink) Produce(ctx context.Context, r *kgo.Record, done func(*kgo.Record, error)) {
	s.cl.Produce(ctx, r, done)
}

// ProduceWait produces recs and waits until Kafka answered each of them,
// or ctx ends: errs[i] is recs[i]'s outcome, or ctx's error for a record
// still unanswered then (it may yet be delivered: the caller must treat it
// as not known).
func (s *Sink) ProduceWait(ctx context.Context, recs []*kgo.Record) []error {
	return produceWait(ctx, s.cl, recs)
}

// ProduceGroup produces recs, as ProduceWait does, on a client of their
// own beside the stream's (created on first use): for records the
// stream's producer failed with their batch, produced again together, so
// that a refusal among them fails none of the stream's records. Each
// partition's records go in the order of recs.
func (s *Sink) ProduceGroup(ctx context.Context, recs []*kgo.Record) []error {
	s.groupOnce.Do(func() {
		opts := append(append([]kgo.Opt(nil), s.opts...), kgo.ProducerLinger(0))
		s.group, s.groupErr = kgo.NewClient(opts...)
	})
	errs := make([]error, len(recs))
	var err error
	switch {
	case s.groupErr != nil:
		err = fmt.Errorf("create Kafka client: %w", s.groupErr)
	case s.group == nil:
		err = kgo.ErrClientClosed // Close ran first
	default:
		return produceWait(ctx, s.group, recs)
	}
	for i := range errs {
		errs[i] = err
	}
	return errs
}

// produceWait is ProduceWait on cl.
func produceWait(ctx context.Context, cl *kgo.Client, recs []*kgo.Record) []error {
	if len(recs) == 0 {
		return nil
	}
	type answer struct {
		i   int
		err error
	}
	index := make(map[*kgo.Record]int, len(recs))
	for i, r := range recs {
		index[r] = i
	}
	answers := make(chan answer, len(recs)) // never blocks a callback
	cb := func(r *kgo.Record, err error) { answers <- answer{index[r], err} }
	for _, r := range recs {
		cl.Produce(ctx, r, cb)
	}
	errs := make([]error, len(recs))
	answered := make([]bool, len(recs))
	for n := 0; n < len(recs); n++ {
		select {
		case a := <-answers:
			if Unplaceable(a.err) {
				// The topic may have had partitions added since the
				// client's metadata was read: the next attempt sees them.
				cl.ForceMetadataRefresh()
			}
			errs[a.i], answered[a.i] = Explain(a.err), true
		case <-ctx.Done():
			for i := range errs {
				if !answered[i] {
					errs[i] = ctx.Err()
				}
			}
			return errs
		}
	}
	return errs
}

// ProduceAlone sends r in a batch of its own and waits for the outcome. It
// is for a record that failed with MESSAGE_TOO_LARGE in a batch with
// others, where the broker's limit (the topic's max.message.bytes) is below
// the producer's batch size: alone, the record fits or is itself too large.
// A second client, created on first use, produces one record at a time.
func (s *Sink) ProduceAlone(ctx context.Context, r *kgo.Record) error {
	s.aloneOnce.Do(func() {
		opts := append(append([]kgo.Opt(nil), s.opts...), kgo.MaxBufferedRecords(1), kgo.ProducerLinger(0))
		s.alone, s.aloneErr = kgo.NewClient(opts...)
	})
	switch {
	case s.aloneErr != nil:
		return fmt.Errorf("create Kafka client: %w", s.aloneErr)
	case s.alone == nil:
		return kgo.ErrClientClosed // Close ran first
	}
	return s.alone.ProduceSync(ctx, r).FirstErr()
}

// Close closes the client; records not yet acked fail with
// kgo.ErrClientClosed (not [Permanent]: the WAL still has them).
func (s *Sink) Close() {
	if s.outages != nil {
		s.outages.remove(s.cl)
	}
	s.cl.Close()
	s.aloneOnce.Do(func() {}) // no one-record client after Close
	if s.alone != nil {
		s.alone.Close()
	}
	s.groupOnce.Do(func() {})
	if s.group != nil {
		s.group.Close()
	}
}

// Permanent reports whether err means the record will not be delivered
// as it is, however often it is retried: too large, an invalid topic, the
// topic missing (once franz-go's unknown-topic retries are spent), not
// authorized, a corrupt message, or any other error franz-go gives up on.
// With no retry limit and no delivery timeout, franz-go retries everything
// else without end, so every error that reaches the callback is permanent
// except a closed client or a cancelled context: that record was simply
// not delivered, and the WAL still has it. A permanent record belongs in
// the status table, never in flight forever.
func Permanent(err error) bool {
	return err != nil && !errors.Is(err, kgo.ErrClientClosed) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// ProducerRefused reports whether err refuses the producer itself, not a
// record: the cluster does not let the relay's principal write
// idempotently (CLUSTER_AUTHORIZATION_FAILED: the IDEMPOTENT_WRITE or the
// cluster's WRITE ACL is missing) or with its transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), its SASL login fails ([SASLFailed]),
// or its TLS handshake does ([TLSFailed]). Every record would fail the
// same way; parking each of them would only move the whole stream into
// the status table, out of order.
func ProducerRefused(err error) bool {
	return errors.Is(err, kerr.ClusterAuthorizationFailed) || errors.Is(err, kerr.TransactionalIDAuthorizationFailed) ||
		SASLFailed(err) || TLSFailed(err)
}

// MaybeTheBatch reports whether err, a broker's refusal, may be about the
// batch the record was in rather than the record: Kafka answers per batch,
// and franz-go then fails every record buffered for that partition with
// the same error. Refusals of the destination (a topic missing, invalid or
// not writable) apply to every record of the topic, and errors that did
// not come from the broker are the record's own.
func MaybeTheBatch(err error) bool {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return false
	}
	switch ke {
	case kerr.UnknownTopicOrPartition, kerr.UnknownTopicID, kerr.TopicAuthorizationFailed, kerr.InvalidTopicException:
		return false
	}
	return true
}

// TooLarge reports whether err says a record, or the batch it was in, is
// larger than the broker or the client accepts.
func TooLarge(err error) bool {
	return errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge)
}

// Cause names err's kind for counting and logging: the Kafka error code's
// name (such as MESSAGE_TOO_LARGE) when there is one, else the error's text
// up to its first detail.
func Cause(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	msg := err.Error()
	if i := strings.IndexAny(msg, ":\"("); i > 0 {
		msg = strings.TrimSpace(msg[:i])
	}
	return msg
}

// ErrorName names err for a metric label, from a fixed set: the Kafka
// error code's name (such as MESSAGE_TOO_LARGE), CLIENT_CLOSED, CANCELED,
// TIMEOUT, or OTHER for any other error. Unlike Cause it never holds text
// from the error, so a label's values stay few.
func ErrorName(err error) string {
	var ke *kerr.Error
	switch {
	case errors.As(err, &ke):
		return ke.Message
	case errors.Is(err, kgo.ErrClientClosed):
		return "CLIENT_CLOSED"
	case errors.Is(err, context.Canceled):
		return "CANCELED"
	case errors.Is(err, context.DeadlineExceeded):
		return "TIMEOUT"
	}
	return "OTHER"
}

// kgoLogger adapts slog to franz-go's logger, every line at debug level:
// the client logs each retry of an outage (dozens of warnings a minute),
// and the relay learns what they say from the client's hooks and errors
// instead (the outage lines of [Outages], [Permanent] failures, [Sink.Ping]
// for TLS and SASL refusals). --log-level debug shows them.
type kgoLogger struct{ l *slog.Logger }

func (k kgoLogger) Level() kgo.LogLevel {
	if k.l.Enabled(context.Background(), slog.LevelDebug) {
		return kgo.LogLevelInfo // not its per-request lines
	}
	return kgo.LogLevelNone
}

func (k kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	k.l.Debug("kafka: "+msg, append(keyvals, "client_level", level.String())...)
}

// ReaderOpts are the options of a client that reads cfg's brokers as the
// producer reaches them (its client id, dialer, TLS and SASL), with none
// of the producer's settings: for a command that reads topics back
// (cdc-relay audit). It never creates a topic.
func ReaderOpts(cfg Config) []kgo.Opt {
	var s Sink
	cfg.AutoCreateTopics = false
	opts := append([]kgo.Opt{kgo.SeedBrokers(cfg.Brokers...)}, clientOpts(cfg)...)
	return append(opts, s.connectionOpts(cfg)...)
}
