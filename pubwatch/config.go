package pubwatch

import (
	"log/slog"
	"time"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/migrations"
)

// Config is what the watches and the publication marks read.
type Config struct {
	// Slot is the replication slot whose checkpoint row keeps the
	// publication marks.
	Slot string
	// Publication is the publication the outbox tables must stay in.
	Publication string
	// Tables are the outbox tables' mappings, table i at index i. A
	// watch judges a Relation message's columns by its table's mapping,
	// with the columns it expects (ExpectedMappings).
	Tables []decoder.Mapping
	// Store is the checkpoint store that keeps the publication marks.
	Store *checkpoint.Store
	// Every is how often each watch checks (the status interval).
	Every time.Duration
	// Log receives what the watches warn of.
	Log *slog.Logger
}

// migrations is outbox table i of c as migrations looks up its
// publication.
func (c Config) migrations(i int) migrations.Config {
	return migrations.Config{OutboxSchema: c.Tables[i].Schema, OutboxTable: c.Tables[i].Table, Publication: c.Publication}
}

// markKey names outbox table i of c in the publication marks.
func markKey(c Config, i int) string {
	return c.Tables[i].Schema + "." + c.Tables[i].Table
}
