package relay

import (
	"os"
	"strings"
	"testing"

	"github.com/cdc-relay/cdc-relay/relay/delivery"
)

// TestReadmeListsParkedReasons: the README's row of
// cdc_relay_events_parked_total names every reason label the stream
// parks with besides Kafka's error codes.
func TestReadmeListsParkedReasons(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "| `cdc_relay_events_parked_total{reason}`") {
			row = line
		}
	}
	for _, reason := range []string{delivery.InvalidRow, delivery.NoTimestamp} {
		if !strings.Contains(row, "`"+reason+"`") {
			t.Errorf("the README's row of cdc_relay_events_parked_total lacks the reason %q:\n%s", reason, row)
		}
	}
}
