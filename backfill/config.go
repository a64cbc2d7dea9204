package backfill

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/sink"
)

// Config configures one backfill.
type Config struct {
	// PostgresURL is the database; the backfill opens one connection of
	// its own, and runs the predicate with its role.
	PostgresURL string
	// Mapping is the table's, as the relay streams it: topic, key, value,
	// headers, routes.
	Mapping decoder.Mapping
	// Kafka are the relay's producer settings.
	Kafka sink.Config
	// KafkaSends, if set, reports whether the table's events of a topic
	// go to Kafka; nil: every one does.
	KafkaSends func(topic string) bool
	// Publishers are the publishers beside Kafka the table's events go
	// to (its webhooks): each batch goes to each of them too, and is done
	// once every publisher of each record took it.
	Publishers []Publisher
	// Where is the SQL predicate that selects the rows, run as it is in a
	// read-only transaction (required: "true" selects every row).
	Where string
	// After, if set, is the key (FormatKey's text) after which the backfill
	// starts: the last key a stopped backfill published.
	After string
	// TopicOverride, if set, is the topic of every record instead of the
	// mapping's (one record per row, routes or not).
	TopicOverride string
	// Rate is the most rows per second; zero is no limit. See DefaultRate.
	Rate float64
	// Batch is the most rows one query reads; zero is DefaultBatch, and it
	// is at most Rate (at least 1), so that at a rate of one row a second
	// or more a batch never waits more than a second for the limiter.
	Batch int
	// DryRun counts the rows and finds the first and last key, and
	// publishes nothing.
	DryRun bool
	// RunID is the value of every record's Header; empty is the start
	// time (RFC 3339, UTC).
	RunID string
	// StopTimeout is how long, once the context ends, the records in
	// flight may take to be acknowledged; zero is 30 seconds.
	StopTimeout time.Duration
	// RecordTable, if set, is the table of backfills (quoted), where the
	// backfill keeps its row up to date for `cdc-relay status`.
	RecordTable string
	// Progress, if set, is told the progress after each batch.
	Progress func(Progress)
	// Logger receives the rows skipped and the producer's lines; nil
	// discards them.
	Logger *slog.Logger
}

// The defaults.
const (
	// DefaultRate is the default rows per second: a small share of what a
	// relay streams (tens of thousands of events a second), so that the
	// live stream, on the same brokers and partitions, keeps its latency.
	DefaultRate = 2000
	// DefaultBatch is the default number of rows a query reads.
	DefaultBatch = 500
)

// withDefaults fills what was left unset.
func (c Config) withDefaults(now time.Time) Config {
	if c.Batch <= 0 {
		c.Batch = DefaultBatch
	}
	if c.Rate > 0 && float64(c.Batch) > c.Rate {
		c.Batch = max(int(c.Rate), 1)
	}
	if c.RunID == "" {
		c.RunID = now.UTC().Format(time.RFC3339)
	}
	if c.StopTimeout <= 0 {
		c.StopTimeout = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Kafka.Logger == nil {
		c.Kafka.Logger = c.Logger
	}
	return c
}

// Validate checks what can be checked without the database.
func (c Config) Validate() error {
	if strings.TrimSpace(c.Where) == "" {
		return errors.New("the predicate is empty: give the SQL condition that selects the rows (true selects every row)")
	}
	if c.Rate < 0 || math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0) {
		return fmt.Errorf("rate %v: want 0 (no limit) or more rows per second", c.Rate)
	}
	if c.TopicOverride != "" {
		if err := decoder.ValidTopic(c.TopicOverride); err != nil {
			return fmt.Errorf("topic override: %w", err)
		}
	}
	_, err := decoder.New(c.Mapping)
	return err
}
