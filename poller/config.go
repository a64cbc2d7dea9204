package poller

import (
	"context"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/internal/defaults"
	"github.com/cdc-relay/cdc-relay/metrics"
	"github.com/cdc-relay/cdc-relay/status"
)

// Config configures a Poller. Zero fields take the defaults of
// DefaultConfig.
type Config struct {
	// Batch is the most rows claimed at once: they are produced together
	// and held in memory, with their locks, until Kafka answered them all
	// (or the attempt's 30 s ended).
	Batch int
	// MaxBytes bounds the records one claim holds in memory: the status
	// rows' (status.ClaimBytes bounds those, and is given the same bound)
	// and those Load reads from outbox rows, which are read a few at a
	// time until the claim's records reach it. A Reload row past it is
	// not loaded, and waits for the next claim. 0 is no bound.
	MaxBytes int64
	// Interval is how often the poller looks for due rows when the last
	// look found none.
	Interval time.Duration
	// NextDue, if set, says how long until the next FAILED row is due,
	// by the database's clock (status.Store.NextDue): a poller whose last
	// claim was not full looks again then, if that is sooner than
	// Interval, so that a row is tried again when its backoff ends, not up
	// to Interval later.
	NextDue func(ctx context.Context) (time.Duration, bool, error)
	// Wake, if set, makes a poller that waits for its next look look at
	// once when it receives: the relay sends on it when a command made
	// rows due now (status.ListenDue).
	Wake <-chan struct{}
	// RetryBase is the wait after the first failed attempt; each further
	// failure doubles it, up to RetryMax, with jitter.
	RetryBase, RetryMax time.Duration
	// MaxAttempts is how many failed attempts make a row DEAD.
	MaxAttempts int
	// DeadLetterTopic, if set, also receives each event marked DEAD, with
	// the error in its headers.
	DeadLetterTopic string
	// CheckTopic, if set, says why a row's topic must not be written by
	// the row's source (status.Row.SourceTable: the allowed topics of the
	// table or message source that wrote the event, as the stream checks
	// them): such a row is never produced, and its attempt fails with the
	// reason. Unset, only Kafka's rules for topic names apply.
	CheckTopic func(source, topic string) error
	// Sends, if set, reports whether the poller's publisher sends the
	// events of source (the status table's source_table) to topic. A
	// reload row whose loaded topic it does not send (a reset re-arms
	// every publisher of a table, and this one is not routed the event's
	// topic) is settled as delivered without being sent: nothing of it is
	// the publisher's to send. (A table that writes back, the only one
	// with a reset trigger, has no routes today: every publisher of it
	// sends every topic, and Sends guards what a later change may allow.)
	// Unset, every topic is sent.
	Sends func(source, topic string) bool
	// CheckRecord, if set, says why Kafka would refuse a row's record (too
	// large for the producer's batch or for its topic): such a row is
	// never produced, and its attempt fails with the reason, as when
	// Kafka refuses it (FAILED with the next attempt, DEAD after
	// MaxAttempts); its key's later rows in the claim are not produced.
	// Unset, every record is produced.
	CheckRecord func(*kgo.Record) error
	// Load, if set, reads the records of Reload rows (status.Row.Reload:
	// a reset of its outbox row, a row adopted at the switch-over) from
	// their outbox rows as they are now, all of a claim's at once, and
	// returns each row with its record (out[i] for rows[i]) or its own
	// error (errs[i]; RowLoader.LoadMany). An error that wraps
	// ErrUnloadable (the outbox row is gone, cannot become a record, or
	// its table is not the relay's) makes that row DEAD; any other leaves
	// it for the next poll. Unset, a Reload row waits.
	Load func(ctx context.Context, rows []status.Row) (out []status.Row, errs []error)
	// PausedTopics, if set, returns the topics paused now (the pause
	// table's: status.Store.PausedTopics). A Reload row's topic is known
	// only once its outbox row is loaded, after the claim left out the
	// rows of paused topics: one loaded for a paused topic is not
	// produced but parked PAUSED with its record (status.Outcome.Paused),
	// and its topic's resume delivers it. It is read once per claim that
	// loaded a row for a topic other than the one the claim saw (which
	// left out the paused ones); when it fails, those rows wait for the
	// next poll.
	// Unset, no loaded row's topic is taken as paused.
	PausedTopics func(ctx context.Context) ([]string, error)
	// Hold, if set, is called before each claim and blocks while the relay
	// is paused (an error, ctx's, ends Run). It returns nil at once when
	// the relay is not paused, whatever ctx, so that a ctx already ended
	// asks whether it would block.
	Hold func(ctx context.Context) error
	// Claimed, if set, is called once per look, with the key of each
	// ordered row of its claim (each key once; rows without a key have
	// none; no key when it claimed nothing) before any
	// of them is produced: the relay holds those keys that it
	// does not hold already (a row whose topic was corrected), so that
	// their later events wait behind the rows until Delivered. The func
	// it returns, if not nil, is called once the claim has ended (its
	// outcomes committed, or not), after Delivered: the relay's new
	// events of those keys wait in memory meanwhile
	// (keyorder.Order.BeginDrain).
	Claimed func(keys []status.Key) (ended func())
	// ByTopic orders a claim's rows by topic (`--ordering topic`, with a
	// status.Store made with status.ByTopic): each topic's rows are
	// produced in id order, a row not delivered stops its topic's later
	// rows, and Claimed and Delivered name topics, with the empty key.
	ByTopic bool
	// TopicOrdered, when ByTopic is false, are the topics whose rows are
	// ordered by topic as ByTopic orders every topic's (a config file's
	// tables with ordering: topic, with a status.Store made with
	// status.ByTopics of the same topics); the other topics' rows are
	// ordered by key.
	TopicOrdered []string
	// Delivered, if set, is called after each claim's outcomes are
	// committed, with the key of each row it delivered (each key once;
	// rows without a key have none; a reload row's is the key its status
	// row holds, not its record's): the relay unblocks
	// those keys that no longer have held rows.
	Delivered func(keys []status.Key)
	// Metrics, if set, counts the poller's cycles, claims and outcomes.
	Metrics *metrics.Metrics
	// Logger; nil discards.
	Logger *slog.Logger
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{Batch: 2000, Interval: time.Second, RetryBase: time.Second, RetryMax: 5 * time.Minute, MaxAttempts: 10}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	defaults.Positive(&c.Batch, d.Batch)
	defaults.Positive(&c.Interval, d.Interval)
	defaults.Positive(&c.RetryBase, d.RetryBase)
	defaults.Positive(&c.RetryMax, d.RetryMax)
	defaults.Positive(&c.MaxAttempts, d.MaxAttempts)
	defaults.Logger(&c.Logger)
	return c
}
