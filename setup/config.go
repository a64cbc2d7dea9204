package setup

import (
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/slot"
)

// Config is what migrate reads of the relay's configuration: the slot's
// (the slot, the outbox tables, the relay's own tables, the connection
// string a new slot adopts rows over), the publication and the message
// sources.
type Config struct {
	slot.Config
	// Publication names the publication of the outbox tables.
	Publication string
	// Messages are the logical decoding messages the relay streams: the
	// first whose content is the envelope gets cdc_relay.emit.
	Messages []decoder.MessageMapping
	// DeleteOutbox says the relay deletes old rows of the first outbox
	// table (retention), so that its role is granted DELETE on it.
	DeleteOutbox bool
}

// migrations names what migrate creates for c with table i as the outbox
// table, for migrations.Apply (as relay.Config.Migrations).
func (c Config) migrations(i int) migrations.Config {
	var outbox decoder.Mapping
	if i < len(c.Tables) {
		outbox = c.Tables[i].Mapping
	}
	return migrations.Config{
		OutboxSchema:     outbox.Schema,
		OutboxTable:      outbox.Table,
		StatusSchema:     c.StatusSchema,
		StatusTable:      c.StatusTable,
		CheckpointSchema: c.CheckpointSchema,
		CheckpointTable:  c.CheckpointTable,
		Publication:      c.Publication,
	}
}
