package report

import (
	"context"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/migrations"
)

// TestReadDatabaseStatsHeldPerTopic: the reading counts the status table's
// held rows (FAILED, DEAD, WAITING, PAUSED) in each state, over every topic
// and per topic, most held first, with the age of each topic's oldest held
// row; DELIVERED rows and topics with none held are left out; the per-topic
// list stops at MaxHeldTopics while the totals count every topic.
func TestReadDatabaseStatsHeldPerTopic(t *testing.T) {
	t.Parallel()
	db := sharedPG.DB(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	cfg := defaultNames()
	if _, err := migrations.Apply(ctx, conn, migrations.DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	status := pgx.Identifier{cfg.StatusSchema, cfg.StatusTable}.Sanitize()
	if s, err := ReadDatabaseStats(ctx, conn, cfg); err != nil || s.Topics == nil || len(s.Topics) != 0 || s.Failed != 0 || s.HeldTopics != 0 {
		t.Fatalf("nothing held: topics %v (nil %v), failed %d, %d topics, %v; want an empty list and zeros", s.Topics, s.Topics == nil, s.Failed, s.HeldTopics, err)
	}
	// SKIPPED stands for a DEAD row an operator skipped.
	insert := `INSERT INTO ` + status + ` (topic, record_key, status, skipped_at, last_error, created_at)
		SELECT $1, 'k', CASE $2 WHEN 'SKIPPED' THEN 'DEAD' ELSE $2 END, CASE $2 WHEN 'SKIPPED' THEN now() END, 'x',
			now() - make_interval(secs => $3) FROM generate_series(1, $4)`
	for _, r := range []struct {
		topic, state string
		age, n       int
	}{
		{"orders", "FAILED", 30, 2}, {"orders", "DEAD", 10, 1}, {"orders", "WAITING", 5, 3}, {"orders", "PAUSED", 1, 1},
		{"orders", "DELIVERED", 3600, 5},
		{"orders", "SKIPPED", 7200, 1}, // not held: counts nowhere, nor as the oldest
		{"payments", "PAUSED", 120, 2}, {"payments", "WAITING", 60, 1},
		{"audit", "DELIVERED", 10, 1},
	} {
		mustExec(t, conn, insert, r.topic, r.state, r.age, r.n)
	}

	s, err := ReadDatabaseStats(ctx, conn, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if s.Failed != 2 || s.Dead != 1 || s.Waiting != 4 || s.Paused != 3 || s.HeldTopics != 2 {
		t.Fatalf("totals: failed %d dead %d waiting %d paused %d in %d topics, want 2 1 4 3 in 2",
			s.Failed, s.Dead, s.Waiting, s.Paused, s.HeldTopics)
	}
	want := []TopicHeld{
		{Topic: "orders", Failed: 2, Dead: 1, Waiting: 3, Paused: 1, OldestHeldSeconds: 30},
		{Topic: "payments", Waiting: 1, Paused: 2, OldestHeldSeconds: 120},
	}
	if len(s.Topics) != len(want) {
		t.Fatalf("topics %+v, want %+v", s.Topics, want)
	}
	for i, got := range s.Topics {
		w := want[i]
		if math.Abs(got.OldestHeldSeconds-w.OldestHeldSeconds) > 5 {
			t.Errorf("topic %s: oldest held %.1f s ago, want about %.0f", got.Topic, got.OldestHeldSeconds, w.OldestHeldSeconds)
		}
		got.OldestHeldSeconds = w.OldestHeldSeconds
		if got != w {
			t.Errorf("topic %d: %+v, want %+v", i, got, w)
		}
	}

	mustExec(t, conn, `INSERT INTO `+status+` (topic, status, last_error)
		SELECT 'many-' || i, 'FAILED', 'x' FROM generate_series(1, $1) i`, MaxHeldTopics)
	if s, err = ReadDatabaseStats(ctx, conn, cfg); err != nil {
		t.Fatal(err)
	}
	if len(s.Topics) != MaxHeldTopics || s.HeldTopics != MaxHeldTopics+2 || s.Failed != 2+MaxHeldTopics {
		t.Fatalf("with %d topics held: %d listed, %d counted, %d FAILED; want %d listed, %d counted, %d FAILED",
			MaxHeldTopics+2, len(s.Topics), s.HeldTopics, s.Failed, MaxHeldTopics, MaxHeldTopics+2, 2+MaxHeldTopics)
	}
	if s.Topics[0].Topic != "orders" || s.Topics[1].Topic != "payments" {
		t.Fatalf("the most held first: %s, %s", s.Topics[0].Topic, s.Topics[1].Topic)
	}

	// The slot's paused topics, sorted; another slot's are not its.
	pauses := pgx.Identifier{cfg.CheckpointSchema, migrations.PauseTable}.Sanitize()
	// A webhook publisher's pauses are its own, not Kafka's.
	mustExec(t, conn, `INSERT INTO `+pauses+` (slot_name, topic, publisher) VALUES ($1, 'payments', 'kafka'), ($1, 'orders', 'kafka'), ('another_slot', 'audit', 'kafka'),
		($1, 'wallet', 'partner'), ($1, 'orders', 'partner'), ($1, 'audit', 'analytics')`, cfg.Slot)
	if s, err = ReadDatabaseStats(ctx, conn, cfg); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.PausedTopics, ","); got != "orders,payments" {
		t.Fatalf("paused topics %s, want orders,payments", got)
	}
	if want := []PublisherTopic{{"analytics", "audit"}, {"partner", "orders"}, {"partner", "wallet"}}; !reflect.DeepEqual(s.PublishersPaused, want) {
		t.Fatalf("publishers' paused topics %v, want %v", s.PublishersPaused, want)
	}

	// The running backfills: rows that say so and whose session lives
	// (this connection's stands for a backfill's); not one whose session
	// is gone, nor one done.
	backfills := migrations.BackfillTableName(migrations.DefaultConfig())
	mustExec(t, conn, `INSERT INTO `+backfills+` (table_name, run_id, predicate, state, backend_pid, application_name, rows_published, rows_selected, last_key, started_at, updated_at)
		VALUES ('public.outbox', 'r1', 'true', 'running', pg_backend_pid(), current_setting('application_name'), 1200, 3000, '1200', now(), now()),
			('public.gone', 'r2', 'true', 'running', 1, 'cdc-relay backfill, pid 1', 5, 10, '5', now(), now()),
			('public.done', 'r3', 'true', 'done', pg_backend_pid(), current_setting('application_name'), 10, 10, '10', now(), now())`)
	if s, err = ReadDatabaseStats(ctx, conn, cfg); err != nil {
		t.Fatal(err)
	}
	if len(s.Backfills) != 1 || s.Backfills[0].Table != "public.outbox" || s.Backfills[0].RowsPublished != 1200 || s.Backfills[0].RowsSelected != 3000 || s.Backfills[0].LastKey != "1200" {
		t.Fatalf("running backfills %+v, want public.outbox's only", s.Backfills)
	}
	// A role that may read the relay's tables but not the table of
	// backfills (migrated, not granted since) still reads every other
	// figure, and is told the GRANT to run; so is a database whose table
	// of backfills cannot be read otherwise (a column dropped), and one
	// migrated by an earlier version, which has no table of backfills.
	// The role is the test's own: roles are the cluster's.
	nobackfills := db.Name + "_nobackfills"
	mustExec(t, conn, "CREATE ROLE "+nobackfills)
	mustExec(t, conn, "GRANT SELECT ON ALL TABLES IN SCHEMA public TO "+nobackfills)
	mustExec(t, conn, "REVOKE SELECT ON "+backfills+" FROM "+nobackfills)
	for _, tc := range []struct {
		name, setup, reset, problem string
	}{
		{"without SELECT on it", "SET ROLE " + nobackfills, "RESET ROLE", "GRANT SELECT ON " + backfills + " TO"},
		{"with a column gone", "ALTER TABLE " + backfills + " DROP COLUMN last_key", "", "could not read the running backfills"},
		{"without the table", "DROP TABLE " + backfills, "", "run `cdc-relay migrate`"},
	} {
		mustExec(t, conn, tc.setup)
		s, err := ReadDatabaseStats(ctx, conn, cfg)
		if err != nil || s.Backfills != nil || !strings.Contains(s.BackfillsProblem, tc.problem) || s.Failed == 0 && s.Dead == 0 && len(s.Topics) == 0 {
			t.Errorf("%s: backfills %+v (%q), figures %+v, %v: want the other figures, and a problem saying %q", tc.name, s.Backfills, s.BackfillsProblem, s, err, tc.problem)
		}
		if tc.reset != "" {
			mustExec(t, conn, tc.reset)
		}
	}
}

// TestReadDatabaseStatsWithoutStatusTable: a missing status table, or
// one not migrated since the upgrade (a column missing), says what to run.
func TestReadDatabaseStatsWithoutStatusTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, sharedPG.DB(t).URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, tt := range []struct{ name, setup, want string }{
		{"no status table", "", "does not exist: run `cdc-relay migrate`"},
		{"a status table of an earlier version", "CREATE TABLE outbox_delivery (id bigint, topic text, status text, created_at timestamptz)",
			"not migrated since the upgrade" + ` (column "skipped_at" does not exist): run ` + "`cdc-relay migrate`"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.setup != "" {
				mustExec(t, conn, tt.setup)
			}
			if _, err := ReadDatabaseStats(ctx, conn, defaultNames()); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ReadDatabaseStats: %v, want it to say %q", err, tt.want)
			}
		})
	}
}

// defaultNames are what a relay reads with the default flags
// (relay.DefaultConfig): migrations.DefaultConfig's tables, slot
// cdc_relay.
func defaultNames() Names {
	m := migrations.DefaultConfig()
	return Names{Slot: "cdc_relay", StatusSchema: m.StatusSchema, StatusTable: m.StatusTable, CheckpointSchema: m.CheckpointSchema}
}

func mustExec(t *testing.T, conn *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
