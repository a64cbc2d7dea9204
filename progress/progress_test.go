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

// headsOf returns a HeadsFunc that gives *heads, whatever it is asked,
// and counts the reads (full ones, afterID 0, apart).
func headsOf(heads *[]Head, full, since *int) HeadsFunc {
	return func(_ context.Context, _ []string, afterID int64) (HeadsRead, error) {
		if afterID == 0 {
			*full++
		} else {
			*since++
		}
		return HeadsRead{Heads: *heads, MaxID: 1}, nil
	}
}

// TestWriterKeepsPositionsTrue: a position is written only once the
// checkpoint row passed it; a topic with held events stays below the
// lowest of their ids, with a failing one's errors, which clear once the
// position moves; positions never go back; the routes' topics get rows,
// and the team's other rows are left alone.
func TestWriterKeepsPositionsTrue(t *testing.T) {
	t.Parallel()
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
	var full, since int
	w := NewWriter(pool, Config{Table: eventStoreTable(), Source: Source{Schema: "public", Name: "events", IDColumn: "position", Topics: []string{"wallet-events", "payment-events"}},
		Every: time.Hour, Saved: func() pglogrepl.LSN { return saved }, Heads: headsOf(&heads, &full, &since)})
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
	heads = []Head{{Topic: "payment-events", MinID: 7, HasMinID: true, Failing: true, Attempts: 3, LastError: "MESSAGE_TOO_LARGE"}}
	round()
	rows := readRows(t, ctx, conn)
	want := map[string]progressRow{"wallet-events": {position: 10}, "payment-events": {position: 6, errors: 3}, "audit": {position: 3}}
	for topic, wr := range want {
		got, ok := rows[topic]
		if !ok || got.position != wr.position || got.errors != wr.errors {
			t.Fatalf("%s: %+v, want position %d, errors %d (all: %v)", topic, got, wr.position, wr.errors, rows)
		}
	}
	if e := rows["payment-events"].lastErr; e == nil || *e != "MESSAGE_TOO_LARGE" {
		t.Fatalf("payment-events' last error is %v, want the failing event's", e)
	}
	var other int64
	if err := conn.QueryRow(ctx, "SELECT last_position FROM outbox_topic_progress WHERE publisher = 'OtherPublisher'").Scan(&other); err != nil || other != 1 {
		t.Fatalf("another publisher's row: %d, %v; want it untouched", other, err)
	}

	// The held events delivered: the position reaches the newest sample,
	// and the errors clear (the next full read). An older event held
	// again (a reset) moves nothing back.
	if _, err := conn.Exec(ctx, "INSERT INTO events (type, tags, data) SELECT 'E', '{}', '{}' FROM generate_series(1, 5)"); err != nil {
		t.Fatal(err)
	}
	heads = []Head{{Topic: "wallet-events", MinID: 2, HasMinID: true}}
	w.heads.full = time.Time{} // a full read is due
	round()
	rows = readRows(t, ctx, conn)
	if r := rows["payment-events"]; r.position != 15 || r.errors != 0 || r.lastErr != nil {
		t.Fatalf("payment-events once delivered: %+v, want position 15, no errors", r)
	}
	if r := rows["wallet-events"]; r.position != 10 {
		t.Fatalf("wallet-events with an older event held again: %+v, want position 10 kept", r)
	}
}

// TestHeadsReadFullyOnlyWhenDue: the heads of every held row, which may
// cost a scan, are read only when the last full read is old, or a topic
// was not among it; other rounds read the rows parked since, and merge
// them in: a lower id taken, a failure kept.
func TestHeadsReadFullyOnlyWhenDue(t *testing.T) {
	t.Parallel()
	ctx, db, _ := pg.ConnectDB(t, time.Minute, eventStore...)
	pool, err := pgxpool.New(ctx, db.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var heads []Head
	var full, since int
	w := NewWriter(pool, Config{Table: eventStoreTable(), Source: Source{Schema: "public", Name: "events", IDColumn: "position", Topics: []string{"a", "b"}},
		Every: time.Hour, Saved: func() pglogrepl.LSN { return 1 << 62 }, Heads: headsOf(&heads, &full, &since)})
	heads = []Head{{Topic: "a", MinID: 8, HasMinID: true, Failing: true, Attempts: 2, LastError: "x"}}
	for i := range 3 {
		if err := w.Round(ctx); err != nil {
			t.Fatal(err)
		}
		if full != 1 || since != i {
			t.Fatalf("round %d: %d full reads, %d of the rows since; want 1 and %d", i+1, full, since, i)
		}
		heads = []Head{{Topic: "a", MinID: 5, HasMinID: true}, {Topic: "b", MinID: 9, HasMinID: true}}
	}
	if a, b := w.heads.heads["a"], w.heads.heads["b"]; a.MinID != 5 || !a.Failing || a.Attempts != 2 || b.MinID != 9 {
		t.Fatalf("merged heads a %+v, b %+v; want a at 5 still failing, b at 9", a, b)
	}
	rows, _ := w.topics(ctx)
	if !slices.Equal(rows, []string{"a", "b"}) {
		t.Fatalf("topics %v", rows)
	}
}

// TestPausedTopics: the team's status column pauses a topic for its
// publisher only, with the paused values; a table without a status
// column pauses nothing.
func TestPausedTopics(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	ctx, db, conn := pg.ConnectDB(t, time.Minute, append(eventStore,
		"CREATE TABLE slim_progress (topic text, publisher text, last_position bigint, PRIMARY KEY (topic, publisher))",
		"CREATE TABLE text_progress (topic text, publisher text, last_position text, PRIMARY KEY (topic, publisher))",
		"CREATE TABLE loose_progress (topic text, publisher text, last_position bigint)",
		"CREATE TABLE strict_progress (topic text, publisher text, last_position bigint, owner text NOT NULL, PRIMARY KEY (topic, publisher))",
		"CREATE TABLE narrow_progress (topic text, publisher text, last_position integer, PRIMARY KEY (topic, publisher))",
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
		{"no unique index", func(tb Table) Table { tb.Name = "loose_progress"; return tb }, src, `no unique index on (topic, publisher): add one (ALTER TABLE "public"."loose_progress" ADD PRIMARY KEY`, 0},
		{"a NOT NULL column without a default", func(tb Table) Table { tb.Name = "strict_progress"; return tb }, src,
			`owner is NOT NULL without a default: give each a default (ALTER TABLE "public"."strict_progress" ALTER COLUMN "owner" SET DEFAULT`, 0},
		{"a position narrower than the id", func(tb Table) Table { tb.Name = "narrow_progress"; return tb }, src, "wider than the progress table's position column (integer): make that column a bigint", 0},
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

// TestPositionWaitsForTransactionsInProgress: an id taken by a
// transaction still open when a higher one committed is not passed: the
// sample waits until the transactions writing to the table at its
// snapshot ended, one writing straight into a partition too.
func TestPositionWaitsForTransactionsInProgress(t *testing.T) {
	t.Parallel()
	partitioned := []string{
		"CREATE TABLE events (type text NOT NULL, tags text[] NOT NULL, data json NOT NULL, position bigserial, PRIMARY KEY (position)) PARTITION BY RANGE (position)",
		"CREATE TABLE events_low PARTITION OF events FOR VALUES FROM (1) TO (1000)",
		"CREATE TABLE outbox_topic_progress (topic text, publisher text, last_position bigint NOT NULL DEFAULT 0, status text NOT NULL DEFAULT 'ACTIVE', error_count int NOT NULL DEFAULT 0, last_error text, last_published_at timestamptz, updated_at timestamptz, PRIMARY KEY (topic, publisher))",
		"INSERT INTO events (type, tags, data) SELECT 'E', '{}', '{}' FROM generate_series(1, 10)",
	}
	for _, tt := range []struct {
		name   string
		schema []string
		into   string // where the open transaction inserts
	}{{"a table", eventStore, "events"}, {"a partition", partitioned, "events_low"}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			positionWaits(t, tt.schema, tt.into)
		})
	}
}

func positionWaits(t *testing.T, schema []string, into string) {
	ctx, db, conn := pg.ConnectDB(t, time.Minute, schema...)
	pool, err := pgxpool.New(ctx, db.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	open, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer open.Rollback(ctx) //nolint:errcheck // committed below
	var held int64
	if err := open.QueryRow(ctx, "INSERT INTO "+into+" (type, tags, data, position) VALUES ('E', '{}', '{}', nextval('events_position_seq')) RETURNING position").Scan(&held); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "INSERT INTO events (type, tags, data) VALUES ('E', '{}', '{}')"); err != nil {
		t.Fatal(err)
	}
	var heads []Head
	var full, since int
	w := NewWriter(pool, Config{Table: eventStoreTable(), Source: Source{Schema: "public", Name: "events", IDColumn: "position", Topics: []string{"a"}},
		Every: time.Hour, Saved: func() pglogrepl.LSN { return 1 << 62 }, Heads: headsOf(&heads, &full, &since)})
	for range 2 {
		if err := w.Round(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if rows := readRows(t, ctx, conn); len(rows) != 0 {
		t.Fatalf("while position %d is in an open transaction: %v; want no position written", held, rows)
	}
	if err := open.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if rows := readRows(t, ctx, conn); rows["a"].position != held+1 {
		t.Fatalf("once it committed: %v; want a at %d", rows, held+1)
	}
}

// TestHeadReadsSettle: a read of the rows parked since starts after the
// highest id of a settled read only: one whose writers to the status
// table have all ended (a park takes its id before it commits).
func TestHeadReadsSettle(t *testing.T) {
	t.Parallel()
	var c headCache
	for i, tt := range []struct {
		read  HeadsRead
		after int64
	}{
		{HeadsRead{MaxID: 10}, 10},                                  // no writer: settled at once
		{HeadsRead{MaxID: 20, Writers: []string{"3/1"}}, 10},        // 3/1 may hold an id up to 20
		{HeadsRead{MaxID: 30, Writers: []string{"3/1", "4/2"}}, 10}, // still writing
		{HeadsRead{MaxID: 40, Writers: []string{"4/2"}}, 20},        // 3/1 ended: 20 settles
		{HeadsRead{MaxID: 50}, 50},                                  // every one ended
	} {
		c.settle(tt.read)
		if c.after != tt.after {
			t.Fatalf("read %d: reads since start after %d, want %d (pending %v)", i+1, c.after, tt.after, c.pending)
		}
	}
}

// TestUnknownHeadLeavesThePosition: a topic with a held row whose id is
// no integer keeps its stored position.
func TestUnknownHeadLeavesThePosition(t *testing.T) {
	t.Parallel()
	w := &Writer{reached: 100, known: true}
	rows := w.rows([]string{"a", "b"}, map[string]Head{"a": {Topic: "a", MinID: 5, HasMinID: true, Unknown: true}})
	if len(rows) != 1 || rows[0].topic != "b" || rows[0].position != 100 {
		t.Fatalf("rows %+v; want b's alone, at 100", rows)
	}
}
