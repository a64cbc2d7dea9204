package report

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/migrations"
)

// TestStatsReaderCountsWhenDue: a StatsReader gives its last held counts
// until they are due again, and counts again at once after a TRUNCATE.
func TestStatsReaderCountsWhenDue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, sharedPG.DB(t).URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := migrations.Apply(ctx, conn, migrations.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	names := defaultNames()
	status := pgx.Identifier{names.StatusSchema, names.StatusTable}.Sanitize()
	park := func(n int) {
		t.Helper()
		mustExec(t, conn, `INSERT INTO `+status+` (topic, status, last_error, created_at) SELECT 'orders', 'FAILED', 'x', now() - interval '1 minute' FROM generate_series(1, $1)`, n)
	}
	r := NewStatsReader(names)
	read := func(step string, failed int64) DatabaseStats {
		t.Helper()
		s, err := r.Read(ctx, conn)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if s.Failed != failed {
			t.Fatalf("%s: %d FAILED, want %d", step, s.Failed, failed)
		}
		return s
	}
	park(2)
	first := read("the first read", 2)

	r.due = time.Now().Add(time.Hour) // as after a count that took three minutes
	park(3)
	time.Sleep(10 * time.Millisecond)
	kept := read("a read before the counts are due", 2)
	if !kept.HeldAt.Equal(first.HeldAt) || !kept.At.After(first.At) {
		t.Errorf("a read before the counts are due: counted at %v, read at %v; want the first's count (%v) in a new reading", kept.HeldAt, kept.At, first.HeldAt)
	}
	if len(kept.Topics) != 1 || kept.Topics[0].OldestHeldSeconds <= first.Topics[0].OldestHeldSeconds {
		t.Errorf("a read before the counts are due: topics %+v; want orders' oldest older than %+v", kept.Topics, first.Topics)
	}

	r.due = time.Now()
	due := read("a read when the counts are due", 5)
	if !due.HeldAt.After(first.HeldAt) {
		t.Errorf("a read when the counts are due: counted at %v, not after %v", due.HeldAt, first.HeldAt)
	}

	// A count that fails (here a column renamed; a backlog too large to
	// count in time, in production) gives the last counts, and is tried
	// again later.
	mustExec(t, conn, "ALTER TABLE "+status+" RENAME COLUMN skipped_at TO skipped_at_away")
	r.due = time.Now()
	failed := read("a read whose count fails", 5)
	if !failed.HeldAt.Equal(due.HeldAt) || !r.due.After(time.Now().Add(heldRetry/2)) {
		t.Errorf("a read whose count fails: counted at %v, next count due %v; want the last count's %v, and a wait", failed.HeldAt, r.due, due.HeldAt)
	}
	mustExec(t, conn, "ALTER TABLE "+status+" RENAME COLUMN skipped_at_away TO skipped_at")

	r.due = time.Now().Add(time.Hour)
	mustExec(t, conn, "TRUNCATE "+status)
	read("a read after a TRUNCATE", 0)
}
