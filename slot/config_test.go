package slot

import (
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/outbox"
)

// defaultConfig is the relay's default configuration (relay.DefaultConfig)
// as the slot reads it: its slot, its outbox table and its own tables.
func defaultConfig() Config {
	return Config{
		Slot:             "cdc_relay",
		Tables:           []outbox.Table{{Mapping: decoder.DefaultMapping()}},
		StatusSchema:     "public",
		StatusTable:      "outbox_delivery",
		CheckpointSchema: "public",
		CheckpointTable:  "cdc_relay_checkpoint",
	}
}

// migrationsOf names what `cdc-relay migrate` creates for cfg's first
// table, with the default publication (relay.Config.Migrations).
func migrationsOf(cfg Config) migrations.Config {
	m := cfg.Tables[0].Mapping
	return migrations.Config{
		OutboxSchema:     m.Schema,
		OutboxTable:      m.Table,
		StatusSchema:     cfg.StatusSchema,
		StatusTable:      cfg.StatusTable,
		CheckpointSchema: cfg.CheckpointSchema,
		CheckpointTable:  cfg.CheckpointTable,
		Publication:      "cdc_relay",
	}
}
