package progress

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// eventStore is an event store's log and its progress table, as its
// schema creates them.
var eventStore = []string{
	"CREATE TABLE events (type text NOT NULL, tags text[] NOT NULL, data json NOT NULL, position bigserial PRIMARY KEY)",
	`CREATE TABLE outbox_topic_progress (
		topic text NOT NULL, publisher text NOT NULL, last_position bigint NOT NULL DEFAULT 0,
		last_published_at timestamptz, status text NOT NULL DEFAULT 'ACTIVE', error_count int NOT NULL DEFAULT 0,
		last_error text, updated_at timestamptz NOT NULL DEFAULT CURRENT_TIMESTAMP,
		PRIMARY KEY (topic, publisher), CHECK (status IN ('ACTIVE', 'PAUSED', 'FAILED')))`,
	"INSERT INTO events (type, tags, data) SELECT 'E', '{}', '{}' FROM generate_series(1, 10)",
}

func eventStoreTable() Table {
	return Table{Schema: "public", Name: "outbox_topic_progress", Publisher: "KafkaPublisher"}.WithDefaults()
}

// progressRow is a row of the progress table.
type progressRow struct {
	position int64
	errors   int
	lastErr  *string
	status   string
}

func readRows(t *testing.T, ctx context.Context, conn *pgx.Conn) map[string]progressRow {
	t.Helper()
	rows, err := conn.Query(ctx, "SELECT topic, last_position, error_count, last_error, status FROM outbox_topic_progress WHERE publisher = 'KafkaPublisher'")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]progressRow{}
	var topic string
	var r progressRow
	if _, err := pgx.ForEachRow(rows, []any{&topic, &r.position, &r.errors, &r.lastErr, &r.status}, func() error {
		out[topic] = r
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestWriterKeepsPositionsTrue: a position is written only once the
// checkpoint row passed it; a topic with a held event stays before it,
// with the event's errors while it fails; positions never go back; the
// team's own rows are kept, and the routes' topics get rows.
func TestWriterKeepsPositionsTrue(t *testing.T) {
	ctx, db, conn := pg.ConnectDB(t, 2*time.Minute, eventStore...)
	pool, err := pgxpool.New(ctx, db.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := conn.Exec(ctx, "INSERT INTO outbox_topic_progress (topic, publisher, last_position) VALUES ('audit', 'KafkaPublisher', 3), ('wallet-events', 'OtherPublisher', 1)"); err != nil {
		t.Fatal(err)
	}
	var saved pglogrepl.LSN
	var heads []Head
	w := NewWriter(pool, Config{Table: eventStoreTable(), Source: Source{Schema: "public", Name: "events", IDColumn: "position", Topics: []string{"wallet-events", "payment-events"}},
		Saved: func() pglogrepl.LSN { return saved }, Heads: func(context.Context, []string) ([]Head, error) { return heads, nil },
		Held: func(context.Context, []string) ([]string, error) {
			var held []string
			for _, h := range heads {
				held = append(held, h.Topic)
			}
			return held, nil
		}})
	round := func() {
		t.Helper()
		if err := w.Round(ctx); err != nil {
			t.Fatal(err)
		}
	}

	round()
	if rows := readRows(t, ctx, conn); len(rows) != 1 || rows["audit"].position != 3 {
		t.Fatalf("before the checkpoint passed the sample: %v; want the team's row alone, as it was", rows)
	}
	saved = 1 << 62
	heads = []Head{NewHead("payment-events", "7", true, 3, "MESSAGE_TOO_LARGE"), NewHead("audit", "9", false, 0, "held behind 8")}
	round()
	rows := readRows(t, ctx, conn)
	want := map[string]progressRow{"wallet-events": {position: 10}, "payment-events": {position: 6, errors: 3}, "audit": {position: 8}}
	for topic, wr := range want {
		got, ok := rows[topic]
		if !ok || got.position != wr.position || got.errors != wr.errors {
			t.Fatalf("%s: %+v, want position %d, errors %d (all: %v)", topic, got, wr.position, wr.errors, rows)
		}
	}
	if e := rows["payment-events"].lastErr; e == nil || *e != "MESSAGE_TOO_LARGE" {
		t.Fatalf("payment-events' last error is %v, want the head's", e)
	}
	var other int64
	if err := conn.QueryRow(ctx, "SELECT last_position FROM outbox_topic_progress WHERE publisher = 'OtherPublisher'").Scan(&other); err != nil || other != 1 {
		t.Fatalf("another publisher's row: %d, %v; want it untouched", other, err)
	}

	// The head delivered: the position reaches the newest sample, and the
	// errors clear. An older event held again (a reset) moves nothing
	// back.
	if _, err := conn.Exec(ctx, "INSERT INTO events (type, tags, data) SELECT 'E', '{}', '{}' FROM generate_series(1, 5)"); err != nil {
		t.Fatal(err)
	}
	heads = []Head{NewHead("wallet-events", "2", true, 1, "reset")}
	round()
	rows = readRows(t, ctx, conn)
	if r := rows["payment-events"]; r.position != 15 || r.errors != 0 || r.lastErr != nil {
		t.Fatalf("payment-events once delivered: %+v, want position 15, no errors", r)
	}
	if r := rows["wallet-events"]; r.position != 10 {
		t.Fatalf("wallet-events with an older event held again: %+v, want position 10 kept", r)
	}
}

// TestPausedTopics: the team's status column pauses a topic for its
// publisher only, with the paused values; a table without a status
// column pauses nothing.
func TestPausedTopics(t *testing.T) {
	ctx, _, conn := pg.ConnectDB(t, time.Minute, eventStore...)
	if _, err := conn.Exec(ctx, `INSERT INTO outbox_topic_progress (topic, publisher, status) VALUES
		('a', 'KafkaPublisher', 'PAUSED'), ('b', 'KafkaPublisher', 'FAILED'), ('c', 'KafkaPublisher', 'ACTIVE'), ('d', 'OtherPublisher', 'PAUSED')`); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		table  Table
		paused []string
	}{
		{"defaults", eventStoreTable(), []string{"a", "b"}},
		{"PAUSED alone", func() Table { tb := eventStoreTable(); tb.Paused = []string{"PAUSED"}; return tb }(), []string{"a"}},
		{"no status column", func() Table { tb := eventStoreTable(); tb.StatusColumn = ""; return tb }(), nil},
		{"a publisher's name quoted", func() Table { tb := eventStoreTable(); tb.Publisher = `O'Brien\`; return tb }(), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, _ := conn.Query(ctx, tt.table.PausedTopics()+" ORDER BY 1")
			got, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.paused) {
				t.Fatalf("paused %v, want %v", got, tt.paused)
			}
		})
	}
}

// TestCheck: what the relay needs of the progress table is checked before
// it starts, each refusal saying what to do; optional columns the table
// lacks are left out.
func TestCheck(t *testing.T) {
	ctx, db, conn := pg.ConnectDB(t, time.Minute, append(eventStore,
		"CREATE TABLE slim_progress (topic text, publisher text, last_position bigint)",
		"CREATE TABLE text_progress (topic text, publisher text, last_position text)",
		"CREATE TABLE uuid_events (id uuid PRIMARY KEY)",
		"CREATE TABLE unindexed_events (position bigint)",
	)...)
	src := Source{Schema: "public", Name: "events", IDColumn: "position"}
	tests := []struct {
		name  string
		table func(Table) Table
		src   Source
		want  string // in the error; "" for none
		left  int
	}{
		{"the event store's table", func(tb Table) Table { return tb }, src, "", 0},
		{"a slim table", func(tb Table) Table { tb.Name = "slim_progress"; return tb }, src, "", 5},
		{"no table", func(tb Table) Table { tb.Name = "nope"; return tb }, src, "does not exist", 0},
		{"no position column", func(tb Table) Table { tb.PositionColumn = "pos"; return tb }, src, `no column "pos" (progress.position_column)`, 0},
		{"a text position", func(tb Table) Table { tb.Name = "text_progress"; return tb }, src, "the relay writes an integer position", 0},
		{"a uuid id", func(tb Table) Table { return tb }, Source{Schema: "public", Name: "uuid_events", IDColumn: "id"}, "an id column of an integer type", 0},
		{"an id without an index", func(tb Table) Table { return tb }, Source{Schema: "public", Name: "unindexed_events", IDColumn: "position"},
			`no index starts with it: CREATE INDEX ON "public"."unindexed_events" ("position")`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, left, err := Check(ctx, conn, tt.table(eventStoreTable()), tt.src)
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("Check: %v, want %q", err, tt.want)
			}
			if len(left) != tt.left {
				t.Fatalf("left out %v, want %d columns", left, tt.left)
			}
		})
	}
	t.Run("a role without its grants", func(t *testing.T) {
		role := pgx.Identifier{"reader_" + db.Name}.Sanitize() // roles are the cluster's, the database the test's
		for _, sql := range []string{"CREATE ROLE " + role, "GRANT SELECT ON outbox_topic_progress, events TO " + role, "SET ROLE " + role} {
			if _, err := conn.Exec(ctx, sql); err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
		}
		t.Cleanup(func() {
			_, _ = conn.Exec(context.Background(), "RESET ROLE; REVOKE ALL ON outbox_topic_progress, events FROM "+role+"; DROP ROLE "+role)
		})
		_, _, err := Check(ctx, conn, eventStoreTable(), src)
		if err == nil || !strings.Contains(err.Error(), "GRANT INSERT, UPDATE ON") {
			t.Fatalf("Check as a role that can only read: %v, want the GRANT to run", err)
		}
	})
}

// TestHeadsReadOnlyWhenNeeded: the heads, which may cost a scan, are read
// again only when a topic newly held has none read, or the last read is
// old: a stale head holds a position back, never past a held event.
func TestHeadsReadOnlyWhenNeeded(t *testing.T) {
	ctx, db, _ := pg.ConnectDB(t, time.Minute, eventStore...)
	pool, err := pgxpool.New(ctx, db.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	held, reads := []string{"a"}, 0
	w := NewWriter(pool, Config{Table: eventStoreTable(), Source: Source{Schema: "public", Name: "events", IDColumn: "position", Topics: []string{"a", "b"}},
		Every: time.Hour, Saved: func() pglogrepl.LSN { return 1 << 62 },
		Held: func(context.Context, []string) ([]string, error) { return held, nil },
		Heads: func(_ context.Context, topics []string) ([]Head, error) {
			reads++
			var hs []Head
			for _, topic := range topics {
				hs = append(hs, NewHead(topic, "5", false, 0, ""))
			}
			return hs, nil
		}})
	for i, tt := range []struct {
		held  []string
		reads int
	}{{[]string{"a"}, 1}, {[]string{"a"}, 1}, {nil, 1}, {[]string{"a", "b"}, 2}, {[]string{"b"}, 2}} {
		held = tt.held
		if err := w.Round(ctx); err != nil {
			t.Fatal(err)
		}
		if reads != tt.reads {
			t.Fatalf("round %d (held %v): %d reads of the heads, want %d", i+1, tt.held, reads, tt.reads)
		}
	}
}
