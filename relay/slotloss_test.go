package relay

import (
	"strings"
	"testing"

	"github.com/cdc-relay/cdc-relay/webhook"
)

// TestOnSlotLossIsChecked: New refuses an unknown --on-slot-loss, recover
// with --accept-slot-loss, and recover for a table without a timestamp
// column, saying why; refuse (or nothing) goes with anything.
func TestOnSlotLossIsChecked(t *testing.T) {
	noTimestamp := func(c *Config) { c.Tables[0].Mapping.TimestampColumn = "" }
	webhookNoID := func(c *Config) {
		c.Publishers = []Publisher{{Name: "partner", Webhook: webhook.Config{URL: "https://partner.example/hooks", SecretFile: "/etc/secret"}}}
		c.Tables[0].Publishers, c.Tables[0].Mapping.IDColumn = []string{"kafka", "partner"}, ""
	}
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
		{name: "recover of a webhook's table without an id column", loss: SlotLossRecover, change: webhookNoID,
			want: "recover parks the rows of public.outbox for its webhook publishers (partner), whose pollers read each row by its id column"},
		{name: "refuse, a webhook's table without an id column", loss: SlotLossRefuse, change: webhookNoID},
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
