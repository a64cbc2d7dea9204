package writeback

import (
	"slices"
	"strings"
	"testing"
)

// TestColumnsLifecycle: the values each team's write_back writes and
// adopts. A retrying value that is not the dead value says only "tried
// again later", so its rows are adopted at the switch-over; one that is
// also the dead value (failed with no dead, no retrying) is not.
func TestColumnsLifecycle(t *testing.T) {
	tests := []struct {
		name            string
		c               Columns
		retrying, dead  string
		adopted         []string
		retryingPending bool
		says            string // in Lifecycle's lines
	}{
		{name: "failed both, as before", c: Columns{Delivered: "SENT", Failed: "FAILED", Pending: []string{"NEW"}},
			retrying: "FAILED", dead: "FAILED", adopted: []string{"NEW"}},
		{name: "retrying a pending value (notification, logistics)", c: Columns{Delivered: "DELIVERED", Failed: "FAILED", Retrying: "PENDING",
			Pending: []string{"PENDING", "PROCESSING"}},
			retrying: "PENDING", dead: "FAILED", adopted: []string{"PENDING", "PROCESSING"}, retryingPending: true,
			says: "set to 'PENDING' or 'PROCESSING' by a runbook, from another value or while tried again"},
		{name: "failed means retry scheduled (publisher worker)", c: Columns{Delivered: "published", Failed: "failed", Dead: "dead_lettered",
			Pending: []string{"pending", "publishing"}},
			retrying: "failed", dead: "dead_lettered", adopted: []string{"pending", "publishing", "failed"},
			says: "rows in 'pending' or 'publishing', and in 'failed' (tried again later, not given up on) when the slot is created"},
		{name: "retrying and dead, no failed", c: Columns{Delivered: "published", Retrying: "failed", Dead: "dead_lettered",
			Pending: []string{"pending"}},
			retrying: "failed", dead: "dead_lettered", adopted: []string{"pending", "failed"}},
		{name: "no pending values: nothing adopted by status", c: Columns{Delivered: "SENT", Failed: "FAILED", Dead: "DEAD"},
			retrying: "FAILED", dead: "DEAD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.c.RetryingValue(); got != tt.retrying {
				t.Errorf("RetryingValue() = %q, want %q", got, tt.retrying)
			}
			if got := tt.c.DeadValue(); got != tt.dead {
				t.Errorf("DeadValue() = %q, want %q", got, tt.dead)
			}
			if got := tt.c.AdoptedValues(); !slices.Equal(got, tt.adopted) {
				t.Errorf("AdoptedValues() = %q, want %q", got, tt.adopted)
			}
			if got := tt.c.RetryingIsPending(); got != tt.retryingPending {
				t.Errorf("RetryingIsPending() = %v, want %v", got, tt.retryingPending)
			}
			if lines := strings.Join(tt.c.Lifecycle(), "\n"); !strings.Contains(lines, tt.says) {
				t.Errorf("Lifecycle() does not say %q:\n%s", tt.says, lines)
			}
		})
	}
}
