package preflight

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/migrations"
)

// TestWarnEmitUnmapped: with cdc_relay.emit writing "outbox", a relay
// whose message sources do not map it is warned that those events are
// lost; one that maps it as payload_only, that the values would be whole
// envelopes; one that maps it, and a relay of tables only, hear nothing.
func TestWarnEmitUnmapped(t *testing.T) {
	t.Parallel()
	ctx, _, conn := pg.ConnectDB(t, time.Minute)
	if err := migrations.CreateEmit(ctx, conn, "outbox"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		messages []decoder.MessageMapping
		want     string // in the warning; "" for none
	}{
		{"mapped", []decoder.MessageMapping{{Prefix: "audit", Topic: "a", PayloadOnly: true}, {Prefix: "outbox"}}, ""},
		{"not mapped", []decoder.MessageMapping{{Prefix: "events"}}, "no messages: entry of this relay maps"},
		{"payload-only", []decoder.MessageMapping{{Prefix: "outbox", Topic: "t", PayloadOnly: true}}, "whole envelope"},
		{"tables only", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			WarnEmitUnmapped(ctx, conn, tc.messages, slog.New(slog.NewTextHandler(&buf, nil)))
			got := buf.String()
			if tc.want == "" && got != "" || tc.want != "" && (!strings.Contains(got, "level=WARN") || !strings.Contains(got, tc.want) || !strings.Contains(got, "prefix=outbox")) {
				t.Errorf("logged %q, want %q", got, tc.want)
			}
		})
	}
}
