package slot

import (
	"cmp"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/cdc-relay/cdc-relay/outbox"
	"github.com/cdc-relay/cdc-relay/status"
)

// Config is what the slot's lifecycle reads of the relay's configuration
// (relay.Config.SlotConfig builds it).
type Config struct {
	// Slot names the replication slot.
	Slot string
	// PostgresURL is the connection string the relay was started with:
	// the slot's leadership session and the replication connection that
	// creates a slot to adopt rows connect with it, and advice names its
	// role. The role needs the REPLICATION attribute.
	PostgresURL string
	// LiveURL, if set, returns the connection string of each new
	// connection (--postgres-url-file, read again at each); nil is
	// PostgresURL.
	LiveURL func() string
	// Tables are the outbox tables: those with pending values or an
	// adopt predicate are adopted by a slot the relay creates.
	Tables []outbox.Table
	// StatusSchema/StatusTable and CheckpointSchema/CheckpointTable name
	// the relay's tables.
	StatusSchema, StatusTable         string
	CheckpointSchema, CheckpointTable string
	// AcceptSlotLoss lets the relay create a new slot although the
	// checkpoint table shows an earlier one existed, and stream a slot
	// ahead of its checkpoint.
	AcceptSlotLoss bool
	// ReplicationTimeout bounds the replication connection that creates a
	// slot to adopt rows; zero is 30s.
	ReplicationTimeout time.Duration
	// Logger; nil discards.
	Logger *slog.Logger
}

// url returns the connection string of a new connection: LiveURL's, else
// PostgresURL.
func (c Config) url() string {
	if c.LiveURL == nil {
		return c.PostgresURL
	}
	return c.LiveURL()
}

// logger is c.Logger, or one that discards.
func (c Config) logger() *slog.Logger {
	return cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
}

// replicationTimeout is c.ReplicationTimeout, 30s when unset.
func (c Config) replicationTimeout() time.Duration {
	return cmp.Or(c.ReplicationTimeout, 30*time.Second)
}

// adoptables are what a slot the relay creates adopts of c's tables
// with pending values or an adopt predicate (the table's or a route's):
// each table's once per publisher its events go to
// (outbox.Table.Adoptables), tables in order, as status.Store.Adopt
// takes them through the publisher's store. A table whose predicates are
// not valid (outbox.Table.ValidateAdopt: a publisher of its events with no
// predicate in a mapping, say) is an error, so that no publisher's
// backlog is left out unsaid.
func (c Config) adoptables() ([]status.Adoptable, error) {
	var ts []status.Adoptable
	names := outbox.Sources{Tables: c.Tables}.TableNames()
	for i, t := range c.Tables {
		if err := t.ValidateAdopt(names[i]); err != nil {
			return nil, err
		}
		for _, a := range t.Adoptables(names[i]) {
			if err := status.ValidPublisher(a.Publisher); err != nil {
				return nil, fmt.Errorf("table %s: adopt its rows for %w: name the table's publishers as the config file does", names[i], err)
			}
			ts = append(ts, a)
		}
	}
	return ts, nil
}

// adoptsRows reports whether a slot the relay creates adopts rows: a
// table of c has pending values or an adopt predicate (its own or a
// route's), so that the slot is created over a replication connection
// whose snapshot the adoption imports.
func (c Config) adoptsRows() bool {
	for _, t := range c.Tables {
		if t.Adopts() || t.WriteBack != nil && len(t.WriteBack.AdoptedValues()) > 0 {
			return true
		}
	}
	return false
}

// Adopts reports whether a table of c has an adopt predicate, its own or
// a route's (outbox.Table.Adopts).
func (c Config) Adopts() bool {
	for _, t := range c.Tables {
		if t.Adopts() {
			return true
		}
	}
	return false
}

// withoutAdopt is c without its adopt predicates, the tables' and the
// routes': for a slot created again over a gap, whose predicates' rows
// the first slot adopted already (the rows of the gap are `recover`'s).
func (c Config) withoutAdopt() Config {
	c.Tables = slices.Clone(c.Tables)
	for i := range c.Tables {
		t := &c.Tables[i]
		t.Adopt, t.AdoptBy, t.RouteAdopt, t.RouteAdoptBy = "", nil, nil, nil
	}
	return c
}
