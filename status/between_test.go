package status

import (
	"errors"
	"slices"
	"testing"

	"github.com/jackc/pglogrepl"

	"github.com/cdc-relay/cdc-relay/decoder"
)

// TestParkedBetween: the events parked from the transactions whose commit
// begins in [from, to), in any state, with their source; nothing before or
// after, nothing without an id.
func TestParkedBetween(t *testing.T) {
	t.Parallel()
	ctx, db := newTestDB(t)
	store := NewStore(db.conn, "public", "outbox_delivery", SourceTables("public.orders", "public.payments"))
	park := func(id string, table int, commit uint64, state string) {
		t.Helper()
		ev := &decoder.Event{Table: table, Topic: "t", Key: []byte("k"), Value: []byte(`{}`), CommitLSN: commit}
		if id != "" {
			ev.ID = []byte(id)
		}
		var err error
		switch state {
		case Dead:
			err = store.Dead(ctx, ev, errors.New("poison"))
		case Paused:
			err = store.Paused(ctx, ev)
		default:
			err = store.Failed(ctx, ev, errors.New("refused"))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	park("before", 0, 0x0fff, Failed)
	park("a", 0, 0x1000, Failed)
	park("a", 1, 0x1400, Dead) // the same id in another table
	park("b", 1, 0x1800, Paused)
	park("", 0, 0x1800, Failed) // no id: nothing to match it by
	park("at-the-end", 0, 0x2000, Failed)
	got, err := store.ParkedBetween(ctx, 0x1000, 0x2000)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, func(a, b ParkedEvent) int {
		if a.CommitLSN != b.CommitLSN {
			return int(a.CommitLSN) - int(b.CommitLSN)
		}
		return len(a.Source) - len(b.Source)
	})
	want := []ParkedEvent{{0x1000, "a", "public.orders"}, {0x1400, "a", "public.payments"}, {pglogrepl.LSN(0x1800), "b", "public.payments"}}
	if !slices.Equal(got, want) {
		t.Errorf("parked between 0/1000 and 0/2000: %v, want %v", got, want)
	}
}
