package slot

import (
	"errors"
	"strings"
	"testing"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/internal/fatal"
	"github.com/cdc-relay/cdc-relay/replication"
)

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
			cfg := defaultConfig()
			cfg.AcceptSlotLoss = tt.accept
			err := checkFound(lost, cp, tt.haveStored, cfg)
			if !fatal.Is(err) {
				t.Fatalf("checkFound: %v, want a fatal error", err)
			}
			var gap *GapError
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
