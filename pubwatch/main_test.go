package pubwatch

import (
	"log/slog"
	"os"
	"testing"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/pgtemp/pgtemptest"
)

// sharedPG is the package's PostgreSQL: each test that needs one has a
// database of its own on it.
var sharedPG = pgtemptest.NewShared(pgtemptest.SharedOptions{})

func TestMain(m *testing.M) { os.Exit(sharedPG.Run(m)) }

// testConfig is the relay's default configuration as the watches read it
// (the default outbox table, slot and publication), keeping the marks in
// store.
func testConfig(store *checkpoint.Store) Config {
	return Config{Slot: "cdc_relay", Publication: "cdc_relay", Tables: []decoder.Mapping{decoder.DefaultMapping()},
		Store: store, Log: slog.New(slog.DiscardHandler)}
}
