package status

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/cdc-relay/cdc-relay/decoder"
)

func TestFailedRecordsAnEventOnce(t *testing.T) {
	ctx, db := newTestDB(t)
	conn, store := db.conn, db.store
	ev := &decoder.Event{ID: []byte("e-1"), Topic: "bad topic!*", Key: []byte("k"), Value: []byte(`{}`), CommitLSN: 0x1000,
		Headers: []decoder.Header{{Key: "id", Value: []byte("e-1")}}}
	for i := 0; i < 2; i++ { // the transaction is sent again after a crash
		if err := store.Failed(ctx, ev, errors.New("illegal topic")); err != nil {
			t.Fatal(err)
		}
	}
	other := *ev
	other.CommitLSN = 0x2000 // the same id in another commit is another event
	if err := store.Failed(ctx, &other, errors.New("illegal topic")); err != nil {
		t.Fatal(err)
	}
	noID := &decoder.Event{Topic: "x", Value: []byte(`{}`), CommitLSN: 0x1000}
	if err := store.Failed(ctx, noID, errors.New("no id")); err != nil {
		t.Fatal(err)
	}
	// An event routed to two topics is two copies: each parked copy has
	// its row, so that each can be delivered.
	second := *ev
	second.Topic = "another bad topic!*"
	for i := 0; i < 2; i++ {
		if err := store.Failed(ctx, &second, errors.New("illegal topic")); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM outbox_delivery").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 4 {
		t.Fatalf("status table holds %d rows, want 4 (one per event and topic)", n)
	}
	// A row that cannot become its record is parked DEAD: the poller leaves
	// it for an operator.
	poison := &decoder.Event{ID: []byte("e-dead"), Topic: "bad topic!*", Value: []byte(`{}`), CommitLSN: 0x2800}
	if err := store.Dead(ctx, poison, errors.New("illegal topic")); err != nil {
		t.Fatal(err)
	}
	var state string
	if err := conn.QueryRow(ctx, "SELECT status FROM outbox_delivery WHERE event_id = 'e-dead'").Scan(&state); err != nil || state != Dead {
		t.Fatalf("poison row parked as %q (%v), want DEAD", state, err)
	}
	// A header PostgreSQL cannot store does not stall the event.
	nul := &decoder.Event{ID: []byte("e-2"), Topic: "t", Value: []byte(`{}`), CommitLSN: 0x3000,
		Headers: []decoder.Header{{Key: "h", Value: []byte("a\x00b")}}}
	if err := store.Failed(ctx, nul, errors.New("poison")); err != nil {
		t.Fatalf("a NUL in a header stalled the status row: %v", err)
	}
	var reason string
	if err := conn.QueryRow(ctx, "SELECT last_error FROM outbox_delivery WHERE event_id = 'e-2'").Scan(&reason); err != nil {
		t.Fatal(err)
	}
	if want := "not stored: headers and timestamp"; !strings.Contains(reason, want) {
		t.Fatalf("reason %q does not say %q", reason, want)
	}
	// An id too long for the unique index (random, so that PostgreSQL
	// cannot compress it to fit) is shortened, not a stall, and
	// the same event sent again is still recorded once.
	random := make([]byte, 2000)
	_, _ = rand.Read(random)
	long := &decoder.Event{ID: []byte(hex.EncodeToString(random)), Topic: "t", Value: []byte(`{}`), CommitLSN: 0x4000}
	for i := 0; i < 2; i++ {
		if err := store.Failed(ctx, long, errors.New("poison")); err != nil {
			t.Fatalf("a 3000-byte event id stalled the status row: %v", err)
		}
	}
	var ids int
	if err := conn.QueryRow(ctx, "SELECT count(*), max(last_error) FROM outbox_delivery WHERE commit_lsn = '0/4000'").Scan(&ids, &reason); err != nil {
		t.Fatal(err)
	}
	if want := "the event id's 4000 bytes, shortened"; ids != 1 || !strings.Contains(reason, want) {
		t.Fatalf("%d rows, reason %q; want one row saying %q", ids, reason, want)
	}
}
