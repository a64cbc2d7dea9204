package relay

import (
	"os"
	"strings"
	"testing"

	"github.com/cdc-relay/cdc-relay/relay/delivery"
)

// TestDocsListParkedReasons: the row of cdc_relay_events_parked_total in
// the metrics table of docs/operating.md names every reason label the
// stream parks with besides Kafka's error codes.
func TestDocsListParkedReasons(t *testing.T) {
	b, err := os.ReadFile("../docs/operating.md")
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "| `cdc_relay_events_parked_total{reason}`") {
			row = line
		}
	}
	if row == "" {
		t.Fatal("docs/operating.md has no row of cdc_relay_events_parked_total{reason} in its metrics table")
	}
	for _, reason := range []string{delivery.InvalidRow, delivery.NoTimestamp, delivery.Slow} {
		if !strings.Contains(row, "`"+reason+"`") {
			t.Errorf("the row of cdc_relay_events_parked_total in docs/operating.md lacks the reason %q:\n%s", reason, row)
		}
	}
}
