package retention

import (
	"log/slog"
	"time"
)

// Config configures a Cleaner. See DefaultConfig.
type Config struct {
	// Interval is the time between cleanups.
	Interval time.Duration
	// Outbox is how long outbox rows are kept, by the mapped timestamp
	// column; zero keeps them.
	Outbox time.Duration
	// Status is how long DELIVERED and DEAD status rows are kept; zero keeps
	// them. FAILED rows are always kept.
	Status time.Duration
	// BatchRows is the most rows one DELETE statement removes.
	BatchRows int
	// Logger; nil discards.
	Logger *slog.Logger
}

// DefaultConfig returns the defaults: every minute, outbox rows kept 7
// days, DELIVERED and DEAD status rows 30 days, 10,000 rows a statement.
func DefaultConfig() Config {
	return Config{Interval: time.Minute, Outbox: 7 * 24 * time.Hour, Status: 30 * 24 * time.Hour, BatchRows: 10000}
}
