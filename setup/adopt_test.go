package setup

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/pgtemp/pgtemptest"
	"github.com/cdc-relay/cdc-relay/outbox"
)

// adoptConfig is a relay config of the event log "events", adopting the
// rows where.
func adoptConfig(where string) Config {
	rc := defaultConfig()
	rc.Tables = []outbox.Table{{Mapping: decoder.Mapping{Schema: "public", Table: "events", IDColumn: "position", PayloadColumn: "data"}, Adopt: where}}
	return rc
}

const eventsSchema = `CREATE TABLE events (position bigserial PRIMARY KEY, data json NOT NULL DEFAULT '{}');
	CREATE TABLE progress (last_position bigint NOT NULL);
	INSERT INTO progress VALUES (4);
	INSERT INTO events SELECT FROM generate_series(1, 10)`

// TestMigrateAdopt: the rows the predicate selects as of the new slot's
// snapshot are adopted, and those committed after are in the slot, each
// in one of them only: a row of a transaction open while the slot is
// created is in exactly one. A second migrate is refused: the slot
// exists, and nothing is adopted again.
func TestMigrateAdopt(t *testing.T) {
	t.Parallel()
	ctx, db, conn := pgtemptestConnect(t)
	url := db.URL()
	open, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := open.Exec(ctx, "INSERT INTO events DEFAULT VALUES"); err != nil { // position 11, committed while the slot is created
		t.Fatal(err)
	}
	rc := adoptConfig("position > (SELECT last_position FROM progress)")
	rc.Slot = db.Name // slots are the cluster's
	done := make(chan error, 1)
	var res Result
	go func() {
		var err error
		res, err = Migrate(ctx, url, rc, Options{})
		done <- err
	}()
	waitSlotListed(ctx, t, url, rc.Slot)
	if err := open.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || !res.Slot.Created {
		t.Fatalf("Migrate = %+v, %v; want the slot created", res, err)
	}
	if _, err := conn.Exec(ctx, "INSERT INTO events DEFAULT VALUES"); err != nil { // position 12, after the slot
		t.Fatal(err)
	}
	adopted := queryStrings(ctx, t, conn, "SELECT event_id FROM outbox_delivery WHERE reload AND status = 'FAILED' AND topic = '' ORDER BY id")
	streamed := countStreamedInserts(ctx, t, conn, rc)
	want := "5 6 7 8 9 10"
	if got := strings.Join(adopted, " "); got != want && got != want+" 11" || int64(len(adopted))+streamed != 8 || res.Slot.Adopted != int64(len(adopted)) {
		t.Errorf("adopted %v (Adopted %d) and %d inserts in the slot; want %s (and 11 if it was in the snapshot), each of 5 to 12 once", adopted, res.Slot.Adopted, streamed, want)
	}

	_, err = Migrate(ctx, url, rc, Options{})
	var exists *AdoptSlotExistsError
	if !errors.As(err, &exists) || !strings.Contains(err.Error(), "pg_drop_replication_slot('"+rc.Slot+"')") || !strings.Contains(err.Error(), "backfill") {
		t.Errorf("second migrate: %v; want it refused, saying how to adopt again", err)
	}
	if n := queryStrings(ctx, t, conn, "SELECT count(*)::text FROM outbox_delivery"); n[0] != "6" && n[0] != "7" {
		t.Errorf("%s status rows after the refusal, want those adopted first", n[0])
	}
}

// TestMigrateAdoptRefusesABadPredicate: a predicate PostgreSQL refuses
// fails with its message, and nothing is created: no relay tables, no
// publication, no slot. So does adopt without an id column, the table's
// or a route's.
func TestMigrateAdoptRefusesABadPredicate(t *testing.T) {
	t.Parallel()
	ctx, db, conn := pgtemptestConnect(t)
	for _, tc := range []struct {
		rc   Config
		want string
	}{
		{adoptConfig("postion > 4"), `column "postion" does not exist`},
		{adoptConfig("position > 4 AND"), "syntax error"},
		{adoptConfig("'x'"), "boolean"},
		{func() Config { rc := adoptConfig("true"); rc.Tables[0].Mapping.Table = "evnets"; return rc }(), `relation "public.evnets" does not exist`},
		{func() Config { rc := adoptConfig("true"); rc.Tables[0].Mapping.IDColumn = ""; return rc }(), "id column"},
		{func() Config {
			rc := adoptConfig("")
			rc.Tables[0].Mapping.IDColumn, rc.Tables[0].Mapping.TagsColumn = "", "data"
			rc.Tables[0].Mapping.Routes, rc.Tables[0].RouteAdopt = []decoder.Route{{Topic: "t", RequiredTags: []string{"k"}}}, []string{"true"}
			return rc
		}(), "id column"},
	} {
		tc.rc.Slot = db.Name // slots are the cluster's
		_, err := Migrate(ctx, db.URL(), tc.rc, Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("adopt %q: %v, want an error with %q", tc.rc.Tables[0].Adopt, err, tc.want)
		}
	}
	made := queryStrings(ctx, t, conn, `SELECT (SELECT count(*) FROM pg_replication_slots WHERE database = current_database()) || ' ' || (SELECT count(*) FROM pg_publication) || ' ' ||
		(to_regclass('public.outbox_delivery') IS NOT NULL)`)
	if made[0] != "0 0 false" {
		t.Errorf("slots, publications, status table after the refusals: %s; want nothing made", made[0])
	}
}

// TestMigrateAdoptByRoute: an event store whose old poller kept its
// position per topic switches over by a predicate per route: each topic
// gets the events after its own position, once, and a topic whose route
// has none, the table none, gets nothing.
func TestMigrateAdoptByRoute(t *testing.T) {
	t.Parallel()
	ctx, db, conn := pgtemptestConnect(t)
	if _, err := conn.Exec(ctx, `ALTER TABLE events ADD COLUMN tags text[] NOT NULL DEFAULT '{wallet_id=w,payment_id=p}';
		CREATE TABLE outbox_topic_progress (topic text, publisher text, last_position bigint, PRIMARY KEY (topic, publisher));
		INSERT INTO outbox_topic_progress VALUES ('wallet-events', 'KafkaPublisher', 8), ('payment-events', 'KafkaPublisher', 6)`); err != nil {
		t.Fatal(err)
	}
	progress := func(topic string) string {
		return "position > (SELECT last_position FROM outbox_topic_progress WHERE topic = '" + topic + "' AND publisher = 'KafkaPublisher') -- its own"
	}
	rc := adoptConfig("")
	rc.Slot = db.Name // slots are the cluster's
	m := &rc.Tables[0].Mapping
	m.TagsColumn, m.Routes = "tags", []decoder.Route{{Topic: "wallet-events", RequiredTags: []string{"wallet_id"}},
		{Topic: "payment-events", AnyOfTags: []string{"payment_id"}}, {Topic: "audit-events", AnyOfTags: []string{"payment_id"}}}
	rc.Tables[0].RouteAdopt = []string{progress("wallet-events"), progress("payment-events")}
	res, err := Migrate(ctx, db.URL(), rc, Options{})
	if err != nil || !res.Slot.Created || res.Slot.Adopted != 2+4 {
		t.Fatalf("Migrate = %+v, %v; want the slot created and 6 rows adopted", res, err)
	}
	got := queryStrings(ctx, t, conn, `SELECT topic || ' ' || string_agg(event_id, ',' ORDER BY id) FROM outbox_delivery
		WHERE reload AND status = 'FAILED' GROUP BY topic ORDER BY topic`)
	if want := "payment-events 7,8,9,10|wallet-events 9,10"; strings.Join(got, "|") != want {
		t.Errorf("adopted %q, want %q", got, want)
	}
}

// pg is the package's PostgreSQL: each test has a database of its own on
// it, and names the slots it makes after it.
var pg = pgtemptest.NewShared(pgtemptest.SharedOptions{})

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }

// pgtemptestConnect is a database of the test's own with the event log of
// 10 rows and a progress row at 4.
func pgtemptestConnect(t *testing.T) (context.Context, *pgtemptest.DB, *pgx.Conn) {
	t.Helper()
	return pg.ConnectDB(t, 2*time.Minute, eventsSchema)
}

// waitSlotListed waits until slot is listed, while it is being created.
func waitSlotListed(ctx context.Context, t *testing.T, url, slot string) {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1", slot).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("slot %s not listed within 30 s", slot)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// countStreamedInserts counts the inserts waiting in rc's slot (peeked,
// not consumed): pgoutput's Insert messages start with 'I'.
func countStreamedInserts(ctx context.Context, t *testing.T, conn *pgx.Conn, rc Config) int64 {
	t.Helper()
	var n int64
	err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_logical_slot_peek_binary_changes($1, NULL, NULL, 'proto_version', '1', 'publication_names', $2)
		WHERE substr(data, 1, 1) = 'I'::bytea`, rc.Slot, rc.Publication).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// queryStrings runs sql and returns its one text column.
func queryStrings(ctx context.Context, t *testing.T, conn *pgx.Conn, sql string) []string {
	t.Helper()
	rows, _ := conn.Query(ctx, sql)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return got
}
