package retention

import (
	"log/slog"
	"time"

	"github.com/cdc-relay/cdc-relay/internal/defaults"
	"github.com/cdc-relay/cdc-relay/metrics"
)

// Config configures a Cleaner. See DefaultConfig.
type Config struct {
	// Interval is the time between cleanups; zero or less takes the
	// default.
	Interval time.Duration
	// Outbox is how long outbox rows are kept, by the mapped timestamp
	// column; zero (or less) keeps them.
	Outbox time.Duration
	// Status is how long DELIVERED and DEAD status rows are kept; zero (or
	// less) keeps them. FAILED rows are always kept.
	Status time.Duration
	// BatchRows is the most rows one DELETE statement removes; zero or less
	// takes the default.
	BatchRows int
	// ByTopic: the relay orders its held events by topic (`--ordering
	// topic`), so a DEAD row holds every later held row of its topic, not
	// only of its key, and is kept while one follows.
	ByTopic bool
	// TopicOrdered, when ByTopic is false, are the topics the relay
	// orders by topic (a config file's tables with ordering: topic): a
	// DEAD row of one of them is kept while any held row of its topic
	// follows, one of another topic while a held row of its key does.
	TopicOrdered []string
	// Metrics, if set, counts the rows deleted.
	Metrics *metrics.Metrics
	// Logger; nil discards.
	Logger *slog.Logger
}

// DefaultConfig returns the defaults: every minute, outbox rows kept 7
// days, DELIVERED and DEAD status rows 30 days, 10,000 rows a statement.
func DefaultConfig() Config {
	return Config{Interval: time.Minute, Outbox: 7 * 24 * time.Hour, Status: 30 * 24 * time.Hour, BatchRows: 10000}
}

// withDefaults fills Interval, BatchRows and Logger when they are unset.
// Outbox and Status keep their values: zero means "keep the rows".
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	defaults.Positive(&c.Interval, d.Interval)
	defaults.Positive(&c.BatchRows, d.BatchRows)
	defaults.Logger(&c.Logger)
	return c
}
