package relay

import (
	"strings"
	"testing"

	"github.com/cdc-relay/cdc-relay/progress"
)

// TestProgressPausesArePerPublisher: a publisher's store is paused by its
// own rows of the progress table, never by another publisher's.
func TestProgressPausesArePerPublisher(t *testing.T) {
	table := progress.Table{Schema: "public", Name: "outbox_topic_progress"}.WithDefaults()
	kafka, partner := table, table
	kafka.Publisher, partner.Publisher = "KafkaPublisher", "WebhookPublisher"
	tables := []progressTable{{publisher: "kafka", table: kafka}, {publisher: "partner", table: partner}}
	for publisher, want := range map[string]string{"kafka": "'KafkaPublisher'", "partner": "'WebhookPublisher'"} {
		got := progressPauses(tables, publisher)
		if len(got) != 1 || !strings.Contains(got[0], want) {
			t.Errorf("%s's pauses: %q, want its own rows' (%s) alone", publisher, got, want)
		}
	}
	if got := progressPauses(tables, "analytics"); len(got) != 0 {
		t.Errorf("a publisher without rows is paused by %q", got)
	}
}
