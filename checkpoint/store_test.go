package checkpoint

import (
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
)

// TestStoreCommitTime: the row's commit time, through every way a row is
// written, on the table `migrate` creates. It never becomes later than the
// commit of a transaction after the stored position: a save that moves
// the position stores the position's time, and any other save keeps the
// time stored, or the row's updated_at when it has none (a slot created).
func TestStoreCommitTime(t *testing.T) {
	t.Parallel()
	ctx, _, conn := pg.ConnectDB(t, 2*time.Minute)
	cfg := migratedConfig()
	s := NewStore(conn, cfg.CheckpointSchema, cfg.CheckpointTable)
	c1 := time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)
	c2 := c1.Add(time.Minute)
	var created time.Time // updated_at of the row Reset saved
	for _, step := range []struct {
		name   string
		slot   string // "s" when empty
		do     func() error
		lsn    pglogrepl.LSN
		commit func() time.Time // want; zero: NULL
	}{
		{"a slot created", "", func() error { return s.Reset(ctx, "s", 0x100) }, 0x100, func() time.Time { return time.Time{} }},
		{"a session starts there", "", func() error { return s.Save(ctx, "s", 0x100) }, 0x100, func() time.Time { return created }},
		{"a transaction passed", "", func() error { return s.SaveAt(ctx, "s", Position{LSN: 0x200, CommitTime: c1}) }, 0x200, func() time.Time { return c1 }},
		{"a session starts there", "", func() error { return s.Save(ctx, "s", 0x200) }, 0x200, func() time.Time { return c1 }},
		{"a keepalive passed", "", func() error { return s.Save(ctx, "s", 0x300) }, 0x300, func() time.Time { return c1 }},
		{"an older position", "", func() error { return s.SaveAt(ctx, "s", Position{LSN: 0x250, CommitTime: c2}) }, 0x300, func() time.Time { return c1 }},
		{"the same position", "", func() error { return s.SaveAt(ctx, "s", Position{LSN: 0x300, CommitTime: c2}) }, 0x300, func() time.Time { return c1 }},
		{"a later transaction", "", func() error { return s.SaveAt(ctx, "s", Position{LSN: 0x400, CommitTime: c2}) }, 0x400, func() time.Time { return c2 }},
		{"the slot created again", "", func() error { return s.Reset(ctx, "s", 0x50) }, 0x50, func() time.Time { return time.Time{} }},
		{"recover moved it to the slot", "", func() error { return s.ResetAt(ctx, "s", Position{LSN: 0x80, CommitTime: c1}) }, 0x80, func() time.Time { return c1 }},
		{"a keepalive passed", "", func() error { return s.Save(ctx, "s", 0x90) }, 0x90, func() time.Time { return c1 }},
		{"a first row", "t", func() error { return s.Init(ctx, "t", 0x10) }, 0x10, func() time.Time { return time.Time{} }},
	} {
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		slot := step.slot
		if slot == "" {
			slot = "s"
		}
		cp, ok, err := s.Load(ctx, slot)
		if err != nil || !ok {
			t.Fatalf("%s: Load: %v, %v", step.name, ok, err)
		}
		if step.lsn == 0x100 && cp.CommitTime.IsZero() {
			created = cp.UpdatedAt
		}
		if want := step.commit(); cp.LSN != step.lsn || !cp.CommitTime.Equal(want) {
			t.Fatalf("%s: the row holds %s committed %v; want %s committed %v", step.name, cp.LSN, cp.CommitTime, step.lsn, want)
		}
		if !cp.WriteAhead {
			t.Fatalf("%s: write_ahead false", step.name)
		}
	}
	if created.IsZero() {
		t.Fatal("the row of a created slot had no updated_at")
	}
}
