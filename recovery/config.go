package recovery

import (
	"errors"
	"time"

	"github.com/jackc/pglogrepl"

	"github.com/cdc-relay/cdc-relay/outbox"
	"github.com/cdc-relay/cdc-relay/pubwatch"
	"github.com/cdc-relay/cdc-relay/sink"
	"github.com/cdc-relay/cdc-relay/slot"
	"github.com/cdc-relay/cdc-relay/writeback"
)

// Config is what [Run] reads of the relay's configuration. The caller
// validates it and fills its defaults.
type Config struct {
	// Config is the slot's (the slot, the connection strings, the
	// tables, the relay's tables, the replication timeout, the logger):
	// PostgresURL for the replication connection that creates the slot
	// again and the watch of what it waits for, LiveURL for each
	// connection that reads outbox rows. Tables are those whose rows are
	// published again, each with a timestamp column. AcceptSlotLoss is not
	// read.
	slot.Config
	// ReservedTopics are the relay's own topics, which no row may go to
	// (decoder.Mapping.ReservedTopics).
	ReservedTopics []string
	// Kafka configures the producer that publishes the rows again; its
	// nil Logger is Logger.
	Kafka sink.Config
	// Watch is the publication watch's configuration (the slot, the
	// publication, the tables' mappings); Run sets its Store and Log.
	Watch pubwatch.Config
}

// url returns the connection string of a new connection that reads rows:
// LiveURL's, else PostgresURL.
func (c Config) url() string {
	if c.LiveURL == nil {
		return c.PostgresURL
	}
	return c.LiveURL()
}

// sources are c's tables, each refusing the reserved topics.
func (c Config) sources() outbox.Sources {
	return outbox.Sources{Tables: c.Tables, Reserved: c.ReservedTopics}
}

// writeBackRows returns what writes the outcomes of the rows of c's
// tables that write back, or nil when none does.
func (c Config) writeBackRows() (*writeback.Rows, error) {
	return outbox.WriteBackRows(c.Tables, c.Logger)
}

// Options configures [Run].
type Options struct {
	// Since is the oldest timestamp-column value published again. Zero
	// means the checkpoint's time minus Margin: the commit time saved with
	// its position, or, for a row without one, the time it was saved.
	Since time.Time
	// Margin reaches back before the checkpoint's time, for transactions
	// that wrote their rows before they committed. Default 10 minutes.
	Margin time.Duration
	// DryRun counts the rows without publishing them or changing
	// anything, and, for each publisher beside Kafka, the events it would
	// park for it (Result.Adopted).
	DryRun bool
	// RecreateSlot drops the slot, when it exists, and creates it again,
	// as for a slot lost: the rows since the checkpoint's time less Margin
	// (or Since) are published again. It is the way out for a slot that
	// cannot decode the WAL after the relay's checkpoint: a publication
	// dropped and created again, or renamed and renamed back, is missing
	// from the WAL written in between, which pgoutput reads it as of.
	RecreateSlot bool
}

// Result says what [Run] found and did.
type Result struct {
	// Gap is the stretch of WAL the relay never read.
	Gap slot.GapError
	// Since is the oldest timestamp published again (a column without a
	// time zone is read 12 hours wider: see Run).
	Since time.Time
	// From says what Since is, for the operator: --since, or the
	// checkpoint's time (its commit time, or when it was saved) less the
	// margin.
	From string
	// Rows is the number of outbox rows found since then; Published of
	// them reached Kafka, Parked went to the status table (rows that cannot
	// become records, or that Kafka refused for good).
	Rows, Published, Parked int
	// Adopted counts, by publisher beside Kafka (a webhook's), the
	// status rows Run parked for it, one per event and topic of the
	// window that goes to it: its poller sends them once a relay runs.
	// With Options.DryRun, the rows it would park now, none parked.
	Adopted map[string]int64
	// NoGap is true when the relay read every transaction (the slot is
	// not ahead of its checkpoint): with Options.Since, Run then
	// publishes again the rows written since, and leaves the checkpoint
	// alone.
	NoGap bool
	// Resume is the position the next `cdc-relay run` starts from, after a
	// gap.
	Resume pglogrepl.LSN
}

// ErrNothingToRecover is returned by [Run] when the slot is not ahead
// of the relay's checkpoint: the relay read every transaction.
var ErrNothingToRecover = errors.New("nothing to recover: the replication slot is not ahead of the relay's checkpoint")
