package status

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/migrations"
)

func TestFailedRecordsAnEventOnce(t *testing.T) {
	t.Parallel()
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

// TestParkKeepsEachSourcesEvent: two outbox tables and a message prefix
// each number their own events, so one id in one transaction and topic is
// three events, parked PAUSED, FAILED or DEAD alike: each has its row, and
// each sent again (PostgreSQL reads the transaction again) is recorded
// once; so is an event of no named source (source_table NULL).
func TestParkKeepsEachSourcesEvent(t *testing.T) {
	t.Parallel()
	ctx, db := newTestDB(t)
	store := NewStore(db.conn, "public", "outbox_delivery", SourceTables("public.outbox", "app.outbox", "message:app"))
	for i, park := range []struct {
		state string
		park  func(*Store, *decoder.Event) error
	}{
		{Paused, func(s *Store, ev *decoder.Event) error { return s.Paused(ctx, ev) }},
		{Failed, func(s *Store, ev *decoder.Event) error { return s.Failed(ctx, ev, errors.New("unknown topic")) }},
		{Dead, func(s *Store, ev *decoder.Event) error { return s.Dead(ctx, ev, errors.New("refused")) }},
	} {
		t.Run(park.state, func(t *testing.T) {
			lsn := uint64(0x1000 * (i + 1))
			for range 2 { // the transaction is sent again after a crash
				for _, s := range []*Store{store, db.store} {
					for table := range 3 {
						ev := &decoder.Event{ID: []byte("1"), Topic: "orders", Key: []byte("k"), Value: []byte(`{}`), CommitLSN: lsn, Table: table}
						if err := park.park(s, ev); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			rows, _ := db.conn.Query(ctx, "SELECT coalesce(source_table, 'NULL') FROM outbox_delivery WHERE commit_lsn = $1::pg_lsn AND status = $2 ORDER BY 1",
				fmt.Sprintf("0/%X", lsn), park.state)
			sources, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if want := []string{"NULL", "app.outbox", "message:app", "public.outbox"}; err != nil || !slices.Equal(sources, want) {
				t.Fatalf("%s rows of the sources: %q (%v), want one of each: %q", park.state, sources, err, want)
			}
		})
	}
}

// TestParkRecordsTheSourceTable: Failed and Dead record the name the store
// was given for the event's table; an event of a table it has no name for,
// or a store given no names, records NULL. Get and the JSON show it.
func TestParkRecordsTheSourceTable(t *testing.T) {
	t.Parallel()
	ctx, db := newTestDB(t)
	names := []string{"public.outbox", "app.orders_outbox", ""}
	named := NewStore(db.conn, "public", "outbox_delivery", SourceTables(names...))
	names[0] = "public.changed" // the store keeps its own copy
	for i, tt := range []struct {
		name  string
		store *Store
		dead  bool
		table int
		want  string // "": NULL
	}{
		{name: "FAILED, the first table", store: named, table: 0, want: "public.outbox"},
		{name: "DEAD, the second table", store: named, dead: true, table: 1, want: "app.orders_outbox"},
		{name: "a table named with nothing", store: named, table: 2},
		{name: "a table beyond the names", store: named, table: 3},
		{name: "a negative index", store: named, dead: true, table: -1},
		{name: "a store given no names", store: db.store, table: 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ev := &decoder.Event{ID: []byte(fmt.Sprintf("src-%d", i)), Topic: "orders", Value: []byte(`{}`),
				CommitLSN: uint64(0x100 * (i + 1)), Table: tt.table}
			park, state := tt.store.Failed, Failed
			if tt.dead {
				park, state = tt.store.Dead, Dead
			}
			if err := park(ctx, ev, errors.New("unknown topic")); err != nil {
				t.Fatal(err)
			}
			var (
				id     int64
				stored *string
			)
			if err := db.conn.QueryRow(ctx, "SELECT id, source_table FROM outbox_delivery WHERE event_id = $1", string(ev.ID)).Scan(&id, &stored); err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.want == "" && stored != nil:
				t.Errorf("source_table %q, want NULL", *stored)
			case tt.want != "" && (stored == nil || *stored != tt.want):
				t.Errorf("source_table %v, want %q", stored, tt.want)
			}
			row, err := db.store.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if row.SourceTable != tt.want || row.Status != state {
				t.Errorf("Get: source table %q, status %s; want %q, %s", row.SourceTable, row.Status, tt.want, state)
			}
			b, err := json.Marshal(row)
			if err != nil {
				t.Fatal(err)
			}
			var doc map[string]any
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			var want any = tt.want
			if tt.want == "" {
				want = nil // null, not left out
			}
			if got, ok := doc["source_table"]; !ok || got != want {
				t.Errorf("JSON source_table %#v (present %v), want %#v: %s", got, ok, want, b)
			}
		})
	}
}

// TestRowsWithoutASourceTable: rows parked before the status table had
// source_table (NULL since the migration added it) are listed, shown,
// claimed by the poller, retried and purged as any other.
func TestRowsWithoutASourceTable(t *testing.T) {
	t.Parallel()
	ctx, db := newTestDB(t)
	// The table as an older relay used it: no source_table yet.
	if _, err := db.conn.Exec(ctx, "ALTER TABLE outbox_delivery DROP COLUMN source_table"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"old-1", "old-2"} {
		if _, err := db.conn.Exec(ctx, "INSERT INTO outbox_delivery (event_id, topic, record_value, last_error, commit_lsn) VALUES ($1, 'orders', '{}', 'UNKNOWN_TOPIC_OR_PARTITION', '0/10')", id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := migrations.Apply(ctx, db.conn, migrations.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	store := NewStore(db.conn, "public", "outbox_delivery", SourceTables("public.outbox"))
	rows, err := store.List(ctx, ListOptions{})
	if err != nil || len(rows) != 2 || rows[0].SourceTable != "" || rows[1].SourceTable != "" {
		t.Fatalf("List = %+v, %v; want the two old rows without a source table", rows, err)
	}
	first, second := rows[1].ID, rows[0].ID
	n, err := store.Claim(ctx, 10, func(_ context.Context, due []Row) []Outcome {
		if len(due) != 2 || due[0].EventID != "old-1" || due[0].SourceTable != "" {
			t.Errorf("claimed %+v, want both old rows", due)
			return nil
		}
		return []Outcome{{ID: due[0].ID, Delivered: true}, {ID: due[1].ID, Dead: true, Err: errors.New("gave up")}}
	})
	if err != nil || n != 2 {
		t.Fatalf("Claim = %d, %v; want 2 rows", n, err)
	}
	if got, err := store.Get(ctx, first); err != nil || got.Status != Delivered {
		t.Fatalf("Get(%d) after delivery = %+v, %v; want DELIVERED", first, got, err)
	}
	if changes, err := store.Retry(ctx, RetryOptions{IDs: []int64{second}}); err != nil || !slices.Equal(changes, []Change{{ID: second, Was: Dead}}) {
		t.Fatalf("Retry of the DEAD old row = %v, %v", changes, err)
	}
	if changes, err := store.Purge(ctx, PurgeOptions{IDs: []int64{first, second}}); err != nil || len(changes) != 2 {
		t.Fatalf("Purge of the old rows = %v, %v", changes, err)
	}
}
