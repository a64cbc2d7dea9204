package relay

import (
	"errors"
	"strings"
	"testing"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/replication"
)

// TestOnSlotLossIsChecked: New refuses an unknown --on-slot-loss, recover
// with --accept-slot-loss, and recover for a table without a timestamp
// column, saying why; refuse (or nothing) goes with anything.
func TestOnSlotLossIsChecked(t *testing.T) {
	noTimestamp := func(c *Config) { c.Tables[0].Mapping.TimestampColumn = "" }
	tests := []struct {
		name   string
		loss   SlotLoss
		accept bool
		change func(*Config)
		want   string // empty: accepted
	}{
		{name: "default"},
		{name: "refuse", loss: SlotLossRefuse},
		{name: "refuse without a timestamp column", loss: SlotLossRefuse, change: noTimestamp},
		{name: "refuse with --accept-slot-loss", loss: SlotLossRefuse, accept: true},
		{name: "recover", loss: SlotLossRecover},
		{name: "unknown", loss: "ignore", want: `--on-slot-loss "ignore": want refuse or recover`},
		{name: "recover with --accept-slot-loss", loss: SlotLossRecover, accept: true, want: "exclude each other"},
		{name: "recover without a timestamp column", loss: SlotLossRecover, change: noTimestamp, want: "none is mapped for public.outbox"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.PostgresURL = "postgres://relay@127.0.0.1/app"
			cfg.OnSlotLoss, cfg.AcceptSlotLoss = tt.loss, tt.accept
			if tt.change != nil {
				tt.change(&cfg)
			}
			_, err := New(cfg)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("New: %v, want an error with %q", err, tt.want)
			}
		})
	}
}

// TestInvalidatedSlotIsAGap: a slot PostgreSQL invalidated, once the relay
// read it, is a gap (which --on-slot-loss recover repairs), not merely an
// unusable slot; with --accept-slot-loss, or before the relay read it, it
// is refused as unusable.
func TestInvalidatedSlotIsAGap(t *testing.T) {
	lost := replication.Slot{Name: "cdc_relay", Plugin: "pgoutput", SameDatabase: true, ConfirmedFlush: 100, Lost: true}
	cp := checkpoint.Checkpoint{LSN: 90, WriteAhead: true}
	tests := []struct {
		name       string
		haveStored bool
		accept     bool
		gap        bool
	}{
		{"read before", true, false, true},
		{"read before, --accept-slot-loss", true, true, false},
		{"never read", false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.AcceptSlotLoss = tt.accept
			err := checkFound(lost, cp, tt.haveStored, cfg)
			if !errors.As(err, new(fatalError)) {
				t.Fatalf("checkFound: %v, want a fatal error", err)
			}
			var gap *SlotGapError
			if errors.As(err, &gap) != tt.gap {
				t.Fatalf("checkFound: %v; a gap: %v, want %v", err, !tt.gap, tt.gap)
			}
			if tt.gap && (!gap.Invalidated || !gap.Dropped || !strings.Contains(err.Error(), "--on-slot-loss recover")) {
				t.Fatalf("gap %+v: %v", gap, err)
			}
			if !strings.Contains(err.Error(), "invalidated") {
				t.Fatalf("the error does not say the slot was invalidated: %v", err)
			}
		})
	}
}
