package setup

import (
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/outbox"
	"github.com/cdc-relay/cdc-relay/slot"
)

// defaultConfig is the relay's default configuration (relay.DefaultConfig,
// whose retention deletes old outbox rows) as migrate reads it.
func defaultConfig() Config {
	return Config{
		Config: slot.Config{
			Slot:             "cdc_relay",
			Tables:           []outbox.Table{{Mapping: decoder.DefaultMapping()}},
			StatusSchema:     "public",
			StatusTable:      "outbox_delivery",
			CheckpointSchema: "public",
			CheckpointTable:  "cdc_relay_checkpoint",
		},
		Publication:  "cdc_relay",
		DeleteOutbox: true,
	}
}
