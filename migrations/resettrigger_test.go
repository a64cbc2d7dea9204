package migrations

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// drop is what a hostile name appends, to try to run a statement of its own.
const drop = "; DROP TABLE victim; --"

// resetLayout is an outbox table with pending values, as the reset
// trigger's tests prepare it.
type resetLayout struct {
	name   string
	cfg    Config
	create []string // the outbox table, before Apply
	after  []string // after Apply: a partition attached later
	// insert adds the row $1 with status $2.
	insert string
	// partitions is the number of partitions insert spreads the rows over
	// (0: not partitioned).
	partitions int
}

// resetLayouts: plain names, names made to break out of every quoting (the
// status table's too, which the trigger function's body names), and a
// partitioned outbox table with a partition created after the trigger.
func resetLayouts() []resetLayout {
	plain := DefaultConfig()
	plain.OutboxTable, plain.SkipOutbox = "app_outbox", true
	plain.Reset = Reset{IDColumn: "id", StatusColumn: "status", Pending: []string{"PENDING", "PROCESSING"}}

	hostile := DefaultConfig()
	hostile.OutboxSchema, hostile.OutboxTable, hostile.SkipOutbox = `o"s$$`+drop, `o'b\x`, true
	hostile.StatusSchema, hostile.StatusTable = `s'c`, "d$fn$"+drop
	hostile.CheckpointSchema = `s'c`
	hostile.Publication = "hostile"
	hostile.Reset = Reset{IDColumn: `i"d'\`, StatusColumn: `st$$'"`, Pending: []string{`PEN'DING\`, "PRO$$CESS" + drop}}
	hostileOutbox := pgx.Identifier{hostile.OutboxSchema, hostile.OutboxTable}.Sanitize()
	id, st := pgx.Identifier{hostile.Reset.IDColumn}.Sanitize(), pgx.Identifier{hostile.Reset.StatusColumn}.Sanitize()

	part := DefaultConfig()
	part.OutboxTable, part.SkipOutbox = "part_outbox", true
	part.StatusTable, part.Publication = "part_delivery", "part"
	part.Reset = plain.Reset
	return []resetLayout{
		{name: "plain names", cfg: plain,
			create: []string{"CREATE TABLE app_outbox (id bigint PRIMARY KEY, status text, note text)"},
			insert: "INSERT INTO app_outbox (id, status) VALUES ($1, $2)"},
		{name: "hostile names", cfg: hostile,
			create: []string{
				"CREATE SCHEMA " + pgx.Identifier{hostile.OutboxSchema}.Sanitize(),
				"CREATE SCHEMA " + pgx.Identifier{hostile.StatusSchema}.Sanitize(),
				"CREATE TABLE " + hostileOutbox + " (" + id + " bigint PRIMARY KEY, " + st + " text, note text)",
			},
			insert: "INSERT INTO " + hostileOutbox + " (" + id + ", " + st + ") VALUES ($1, $2)"},
		{name: "a partitioned table", cfg: part,
			create: []string{
				"CREATE TABLE part_outbox (id bigint, status text, note text, created date, PRIMARY KEY (id, created)) PARTITION BY RANGE (created)",
				"CREATE TABLE part_2026 PARTITION OF part_outbox FOR VALUES FROM ('2026-01-01') TO ('2027-01-01')",
				"CREATE TABLE part_default PARTITION OF part_outbox DEFAULT",
			},
			after: []string{"CREATE TABLE part_2027 PARTITION OF part_outbox FOR VALUES FROM ('2027-01-01') TO ('2028-01-01')"},
			// Rows in each of the three partitions.
			insert:     "INSERT INTO part_outbox (id, status, created) VALUES ($1::bigint, $2, (ARRAY[date '2026-06-01', '2027-06-01', '2031-01-01'])[$1::int % 3 + 1])",
			partitions: 3},
	}
}

// TestResetTriggerFires: the trigger migrate creates fires on an UPDATE
// that sets the status to a pending value from one that is not (NULL
// included), and on no other; when it fires, the event's status row is
// FAILED, reload, due now, with its source table and id: a new row, or the
// event's FAILED or DEAD row converted (its DELIVERED row, and another
// table's row of the same id, are left alone).
func TestResetTriggerFires(t *testing.T) {
	t.Parallel()
	ctx, _, conn := pg.ConnectDB(t, 2*time.Minute, "CREATE TABLE victim (id int)")
	// A token of a case: P0 and P1 are the layout's pending values, NULL
	// is NULL, anything else itself.
	tests := []struct {
		name     string
		from, to string // to "" updates another column only
		existing string // the status of a row the event has before, or ""
		other    bool   // the existing row is another table's
		want     []string
	}{
		{name: "SENT to pending", from: "SENT", to: "P0", want: []string{"FAILED reload"}},
		{name: "FAILED to pending", from: "FAILED", to: "P0", want: []string{"FAILED reload"}},
		{name: "NULL to pending", from: "NULL", to: "P1", want: []string{"FAILED reload"}},
		{name: "pending to pending", from: "P0", to: "P1"},
		{name: "pending to itself", from: "P1", to: "P1"},
		{name: "SENT to FAILED", from: "SENT", to: "FAILED"},
		{name: "pending to SENT", from: "P0", to: "SENT"},
		{name: "another column", from: "SENT", to: ""},
		{name: "a DEAD row converted", from: "FAILED", to: "P0", existing: "DEAD", want: []string{"FAILED reload copy"}},
		{name: "a FAILED row converted", from: "FAILED", to: "P1", existing: "FAILED", want: []string{"FAILED reload copy"}},
		{name: "a DELIVERED row kept", from: "SENT", to: "P0", existing: "DELIVERED", want: []string{"DELIVERED copy", "FAILED reload"}},
		{name: "another table's row kept", from: "SENT", to: "P0", existing: "FAILED", other: true,
			want: []string{"FAILED other table copy", "FAILED reload"}},
	}
	for li, l := range resetLayouts() {
		t.Run(l.name, func(t *testing.T) {
			for _, s := range l.create {
				if _, err := conn.Exec(ctx, s); err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			}
			res, err := Apply(ctx, conn, l.cfg)
			if err != nil || res.Reset != ResetCreated {
				t.Fatalf("Apply: %+v, %v; want the reset trigger created", res, err)
			}
			for _, s := range l.after {
				if _, err := conn.Exec(ctx, s); err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			}
			value := func(token string) any {
				switch token {
				case "NULL":
					return nil
				case "P0", "P1":
					return l.cfg.Reset.Pending[token[1]-'0']
				}
				return token
			}
			outbox := pgx.Identifier{l.cfg.OutboxSchema, l.cfg.OutboxTable}.Sanitize()
			status := pgx.Identifier{l.cfg.StatusSchema, l.cfg.StatusTable}.Sanitize()
			idCol := pgx.Identifier{l.cfg.Reset.IDColumn}.Sanitize()
			statusCol := pgx.Identifier{l.cfg.Reset.StatusColumn}.Sanitize()
			for i, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					id := li*100 + i + 1
					if _, err := conn.Exec(ctx, l.insert, id, value(tc.from)); err != nil {
						t.Fatal(err)
					}
					if tc.existing != "" {
						source := SourceTable(l.cfg)
						if tc.other {
							source = "public.other"
						}
						if _, err := conn.Exec(ctx, "INSERT INTO "+status+" (event_id, source_table, topic, record_value, status, attempts, last_error, commit_lsn, next_attempt_at)"+
							" VALUES ($1, $2, 'orders', 'v', $3, 5, 'MESSAGE_TOO_LARGE', '0/10', now() + interval '1 hour')",
							fmt.Sprint(id), source, tc.existing); err != nil {
							t.Fatal(err)
						}
					}
					update := "UPDATE " + outbox + " SET " + statusCol + " = $1 WHERE " + idCol + " = $2"
					args := []any{value(tc.to), id}
					if tc.to == "" {
						update, args = "UPDATE "+outbox+" SET note = 'edited' WHERE "+idCol+" = $1", []any{id}
					}
					if tag, err := conn.Exec(ctx, update, args...); err != nil || tag.RowsAffected() != 1 {
						t.Fatalf("%s: %v, %v", update, tag, err)
					}
					if got := statusRows(ctx, t, conn, status, SourceTable(l.cfg), id); !slices.Equal(got, tc.want) {
						t.Errorf("status rows of event %d: %q, want %q", id, got, tc.want)
					}
				})
			}
			var partitions int
			if err := conn.QueryRow(ctx, "SELECT count(DISTINCT tableoid) FROM "+outbox).Scan(&partitions); err != nil || l.partitions > 0 && partitions != l.partitions {
				t.Errorf("the rows are in %d partitions (%v), want %d", partitions, err, l.partitions)
			}
		})
	}
	var victim bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass('public.victim') IS NOT NULL").Scan(&victim); err != nil || !victim {
		t.Fatalf("a hostile name dropped table victim: %v %v", victim, err)
	}
}

// statusRows describes the status rows of event id, in order: the status,
// "reload" for a reload row (which must be due now, with no attempt, from
// source, with the reason), "other table" for another table's row, and
// "copy" for the row that existed before (topic orders, a record's copy).
func statusRows(ctx context.Context, t *testing.T, conn *pgx.Conn, status, source string, id int) []string {
	t.Helper()
	rows, err := conn.Query(ctx, "SELECT status, reload, source_table, topic, attempts, next_attempt_at <= now(), last_error FROM "+status+
		" WHERE event_id = $1 ORDER BY id", fmt.Sprint(id))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var st, src, topic, why string
		var reload, due bool
		var attempts int
		if err := rows.Scan(&st, &reload, &src, &topic, &attempts, &due, &why); err != nil {
			t.Fatal(err)
		}
		d := st
		if reload {
			d += " reload"
			if attempts != 0 || !due || !strings.Contains(why, "set back to a pending status") {
				t.Errorf("event %d's reload row: %d attempts, due %v, reason %q", id, attempts, due, why)
			}
		}
		if src != source {
			d += " other table"
		}
		if topic == "orders" {
			d += " copy"
		}
		got = append(got, d)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestResetTriggerStaysCurrent: migrate again keeps a current trigger
// (and so takes no lock on the table: a long reader of it does not hold
// migrate up), replaces one for other pending
// values, a disabled one and one with other arguments, and drops it from
// a table that lists no pending values any more. LookupResetTrigger says
// how each stale trigger differs.
func TestResetTriggerStaysCurrent(t *testing.T) {
	t.Parallel()
	ctx, _, conn := pg.ConnectDB(t, 2*time.Minute, "CREATE TABLE app_outbox (id bigint PRIMARY KEY, status text, state text)")
	cfg := DefaultConfig()
	cfg.OutboxTable, cfg.SkipOutbox = "app_outbox", true
	if _, err := Apply(ctx, conn, cfg); err != nil { // the status table and its trigger function
		t.Fatal(err)
	}
	reset := func(col string, pending ...string) Reset {
		return Reset{IDColumn: "id", StatusColumn: col, Pending: pending}
	}
	tests := []struct {
		name   string
		before string // SQL run first
		reader bool   // another session reads the table meanwhile, in a transaction
		reset  Reset
		stale  string // what LookupResetTrigger says of the trigger before Apply
		want   ResetChange
		err    string   // Apply's error, if any
		fires  []string // [column, value]... an update of the column to the value makes a status row
		silent []string // and these make none
	}{
		{name: "no pending values, no trigger", want: ResetNone, silent: []string{"status", "PENDING"}},
		{name: "created", reset: reset("status", "PENDING"), want: ResetCreated,
			fires: []string{"status", "PENDING"}, silent: []string{"status", "QUEUED"}},
		{name: "kept", reset: reset("status", "PENDING"), reader: true, want: ResetKept, fires: []string{"status", "PENDING"}},
		{name: "stale behind a long reader", reset: reset("status", "QUEUED"), reader: true, stale: "was created for another status column or other pending values",
			err: "waited 5s for a lock on the table that another session holds", fires: []string{"status", "PENDING"}, silent: []string{"status", "QUEUED"}},
		{name: "other pending values", reset: reset("status", "QUEUED", "PENDING"), stale: "was created for another status column or other pending values",
			want: ResetCreated, fires: []string{"status", "QUEUED", "status", "PENDING"}},
		{name: "another status column", reset: reset("state", "QUEUED", "PENDING"), stale: "was created for another status column or other pending values",
			want: ResetCreated, fires: []string{"state", "QUEUED"}, silent: []string{"status", "QUEUED"}},
		{name: "disabled", before: "ALTER TABLE app_outbox DISABLE TRIGGER cdc_relay_reset", reset: reset("state", "QUEUED", "PENDING"),
			stale: "is disabled", want: ResetCreated, fires: []string{"state", "QUEUED"}},
		{name: "other arguments", before: `DROP TRIGGER cdc_relay_reset ON app_outbox;
			CREATE TRIGGER cdc_relay_reset AFTER UPDATE ON app_outbox FOR EACH ROW EXECUTE FUNCTION public.outbox_delivery_note_reset('id', 'public.other')`,
			reset: reset("state", "QUEUED"), stale: `passes the arguments ["id" "public.other"] instead of ["id" "public.app_outbox"]`,
			want: ResetCreated, fires: []string{"state", "QUEUED"}},
		{name: "another function", before: `CREATE FUNCTION other_fn() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NULL; END';
			DROP TRIGGER cdc_relay_reset ON app_outbox;
			CREATE TRIGGER cdc_relay_reset AFTER UPDATE ON app_outbox FOR EACH ROW EXECUTE FUNCTION other_fn('id', 'public.app_outbox')`,
			reset: reset("state", "QUEUED"), stale: `calls public.other_fn() instead of "public"."outbox_delivery_note_reset"()`,
			want: ResetCreated, fires: []string{"state", "QUEUED"}},
		{name: "no pending values any more", stale: "is there, though write_back lists no pending values", want: ResetDropped, silent: []string{"state", "QUEUED"}},
		{name: "and again", want: ResetNone, silent: []string{"state", "QUEUED"}},
	}
	id := 0
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.before != "" {
				if _, err := conn.Exec(ctx, tc.before); err != nil {
					t.Fatal(err)
				}
			}
			cfg.Reset = tc.reset
			if have, err := LookupResetTrigger(ctx, conn, cfg); err != nil || have.Stale != tc.stale {
				t.Errorf("LookupResetTrigger: %+v, %v; want stale %q", have, err, tc.stale)
			}
			if tc.reader {
				readTable(ctx, t, conn, "app_outbox")
			}
			res, err := Apply(ctx, conn, cfg)
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "run migrate again") {
					t.Fatalf("Apply: %v, want an error saying %q", err, tc.err)
				}
			case err != nil || res.Reset != tc.want:
				t.Fatalf("Apply: %+v, %v; want Reset %d", res, err, tc.want)
			default:
				if have, err := LookupResetTrigger(ctx, conn, cfg); err != nil || have.Exists != (len(tc.reset.Pending) > 0) || have.Stale != "" {
					t.Errorf("LookupResetTrigger after Apply: %+v, %v", have, err)
				}
			}
			check := func(pairs []string, fires bool) {
				for i := 0; i < len(pairs); i += 2 {
					id++
					col := pgx.Identifier{pairs[i]}.Sanitize()
					if _, err := conn.Exec(ctx, "INSERT INTO app_outbox (id, status, state) VALUES ($1, 'SENT', 'SENT')", id); err != nil {
						t.Fatal(err)
					}
					if _, err := conn.Exec(ctx, "UPDATE app_outbox SET "+col+" = $1 WHERE id = $2", pairs[i+1], id); err != nil {
						t.Fatal(err)
					}
					var n int
					if err := conn.QueryRow(ctx, "SELECT count(*) FROM outbox_delivery WHERE event_id = $1 AND reload", fmt.Sprint(id)).Scan(&n); err != nil {
						t.Fatal(err)
					}
					if (n == 1) != fires || n > 1 {
						t.Errorf("%s set to %s: %d reload rows, want fires %v", pairs[i], pairs[i+1], n, fires)
					}
				}
			}
			check(tc.fires, true)
			check(tc.silent, false)
		})
	}
}

// TestResetTriggerNeedsTheTableOwner: migrate as a role that owns the
// relay's tables but not the outbox table says that a table with pending
// values needs its owner, and changes nothing. And PUBLIC may not execute
// the trigger function, which runs with its owner's rights: no other role
// can put it on a table of its own to write status rows.
func TestResetTriggerNeedsTheTableOwner(t *testing.T) {
	t.Parallel()
	ctx, db, conn := pg.ConnectDB(t, 2*time.Minute)
	// Roles are the cluster's: named after the test's database.
	app, migrator := "app_"+db.Name, "migrator_"+db.Name
	for _, stmt := range []string{"CREATE ROLE " + app, "CREATE ROLE " + migrator + " LOGIN", "GRANT CREATE ON SCHEMA public TO " + migrator,
		"CREATE TABLE app_outbox (id bigint PRIMARY KEY, status text)", "ALTER TABLE app_outbox OWNER TO " + app} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	cc, err := pgx.ParseConfig(db.URL())
	if err != nil {
		t.Fatal(err)
	}
	cc.User = migrator
	mig, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		t.Fatal(err)
	}
	defer mig.Close(context.Background())
	cfg := DefaultConfig()
	cfg.OutboxTable, cfg.SkipOutbox, cfg.Publication = "app_outbox", true, "app"
	cfg.Reset = Reset{IDColumn: "id", StatusColumn: "status", Pending: []string{"PENDING"}}
	_, err = Apply(ctx, mig, cfg)
	want := `create the reset trigger on "public"."app_outbox": this role may not: run migrate as a role that may create triggers on the table (its owner)`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Apply as a role that does not own the table: %v, want %q", err, want)
	}
	if have, err := LookupResetTrigger(ctx, conn, cfg); err != nil || have.Exists {
		t.Fatalf("the trigger: %+v, %v; want none", have, err)
	}
	var owner, other bool
	if err := conn.QueryRow(ctx, "SELECT has_function_privilege($2, $1, 'EXECUTE'), has_function_privilege($3, $1, 'EXECUTE')",
		ResetFunction(cfg)+"()", migrator, app).Scan(&owner, &other); err != nil || !owner || other {
		t.Fatalf("EXECUTE on the trigger function: its owner %v, another role %v (%v); want true, false", owner, other, err)
	}
}

// TestResetTriggerIgnoresANullID: a row with no id is no event the relay
// could find again: a reset of it adds no status row.
func TestResetTriggerIgnoresANullID(t *testing.T) {
	t.Parallel()
	ctx, _, conn := pg.ConnectDB(t, 2*time.Minute, "CREATE TABLE app_outbox (id bigint, status text)")
	cfg := DefaultConfig()
	cfg.OutboxTable, cfg.SkipOutbox = "app_outbox", true
	cfg.Reset = Reset{IDColumn: "id", StatusColumn: "status", Pending: []string{"PENDING"}}
	if _, err := Apply(ctx, conn, cfg); err != nil {
		t.Fatal(err)
	}
	for _, id := range []any{nil, 7} {
		if _, err := conn.Exec(ctx, "INSERT INTO app_outbox VALUES ($1, 'SENT')", id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, "UPDATE app_outbox SET status = 'PENDING'"); err != nil {
		t.Fatal(err)
	}
	rows, _ := conn.Query(ctx, "SELECT event_id FROM outbox_delivery")
	ids, err := pgx.CollectRows(rows, pgx.RowTo[*string])
	if err != nil || len(ids) != 1 || ids[0] == nil || *ids[0] != "7" {
		t.Fatalf("status rows' event ids: %v, %v; want only 7", ids, err)
	}
}

// TestResetTriggerNotifies: a reset wakes the running relay's poller: it
// notifies cdc_relay_due (status.DueChannel) when it commits.
func TestResetTriggerNotifies(t *testing.T) {
	t.Parallel()
	ctx, _, conn := pg.ConnectDB(t, 2*time.Minute, "CREATE TABLE app_outbox (id bigint, status text)")
	cfg := DefaultConfig()
	cfg.OutboxTable, cfg.SkipOutbox = "app_outbox", true
	cfg.Reset = Reset{IDColumn: "id", StatusColumn: "status", Pending: []string{"PENDING"}}
	if _, err := Apply(ctx, conn, cfg); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{"INSERT INTO app_outbox VALUES (7, 'SENT')", "LISTEN cdc_relay_due", "UPDATE app_outbox SET status = 'PENDING'"} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if n, err := conn.WaitForNotification(wctx); err != nil || n.Channel != "cdc_relay_due" {
		t.Fatalf("after a reset: %+v, %v; want a notification on cdc_relay_due", n, err)
	}
}

// readTable reads table in a transaction of another session, which holds
// its ACCESS SHARE lock until the test ends.
func readTable(ctx context.Context, t *testing.T, conn *pgx.Conn, table string) {
	t.Helper()
	reader, err := pgx.Connect(ctx, conn.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reader.Close(context.Background()) })
	if _, err := reader.Exec(ctx, "BEGIN; SELECT count(*) FROM "+table); err != nil {
		t.Fatal(err)
	}
}

// TestResetTriggerSkipsAClaimedRow: a reset while the poller holds the
// event's status row (claimed, its outbox row being written) neither waits
// for it nor deadlocks: a reload row is added beside it. The id is the
// column's output text, as the stream sends it: a char(n) keeps its
// padding.
func TestResetTriggerSkipsAClaimedRow(t *testing.T) {
	t.Parallel()
	ctx, _, conn := pg.ConnectDB(t, 2*time.Minute, "CREATE TABLE app_outbox (id char(4) PRIMARY KEY, status text)")
	cfg := DefaultConfig()
	cfg.OutboxTable, cfg.SkipOutbox = "app_outbox", true
	cfg.Reset = Reset{IDColumn: "id", StatusColumn: "status", Pending: []string{"PENDING"}}
	if _, err := Apply(ctx, conn, cfg); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		"INSERT INTO app_outbox VALUES ('ab', 'FAILED')",
		"INSERT INTO outbox_delivery (event_id, source_table, topic, status, last_error) VALUES ('ab  ', 'public.app_outbox', 'orders', 'FAILED', 'x')",
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	poller, err := pgx.Connect(ctx, conn.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer poller.Close(context.Background())
	tx, err := poller.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, "SELECT FROM outbox_delivery FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SET lock_timeout = '2s'"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "UPDATE app_outbox SET status = 'PENDING'"); err != nil {
		t.Fatalf("reset while the poller holds the status row: %v", err)
	}
	rows, _ := conn.Query(ctx, "SELECT event_id || ' ' || reload FROM outbox_delivery ORDER BY id")
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || fmt.Sprint(got) != "[ab   false ab   true]" {
		t.Fatalf("status rows %q (%v); want the held one untouched and a reload row beside it, with the padded id", got, err)
	}
}

// TestResetTriggerLeavesTheRelaysOwnWrites: an UPDATE that sets a pending
// value in a transaction marked with OwnWriteSetting (the relay writing a
// retrying value that is pending) adds no reload row, over a FAILED row
// or a pending one. With FromPending (the retrying value is pending, so a
// row being tried again reads pending) a runbook's UPDATE that sets a
// pending value over a pending one re-arms the event the relay parked,
// and leaves alone one it never parked (an application setting the status
// of a row the stream carries: no second copy); without FromPending such
// an UPDATE fires nothing. A reset from a value that is not pending works
// as ever in both.
func TestResetTriggerLeavesTheRelaysOwnWrites(t *testing.T) {
	t.Parallel()
	for _, fromPending := range []bool{false, true} {
		t.Run(fmt.Sprintf("FromPending %v", fromPending), func(t *testing.T) {
			t.Parallel()
			ctx, _, conn := pg.ConnectDB(t, 2*time.Minute, "CREATE TABLE app_outbox (id bigint, status text)",
				"INSERT INTO app_outbox VALUES (7, 'FAILED'), (8, 'PENDING')")
			cfg := DefaultConfig()
			cfg.OutboxTable, cfg.SkipOutbox = "app_outbox", true
			cfg.Reset = Reset{IDColumn: "id", StatusColumn: "status", Pending: []string{"PENDING", "PROCESSING"}, FromPending: fromPending}
			if _, err := Apply(ctx, conn, cfg); err != nil {
				t.Fatal(err)
			}
			reloads := func(what string, want int) {
				t.Helper()
				var n int
				if err := conn.QueryRow(ctx, "SELECT count(*) FROM outbox_delivery WHERE reload").Scan(&n); err != nil {
					t.Fatal(err)
				}
				if n != want {
					t.Fatalf("%s: %d reload rows, want %d", what, n, want)
				}
			}
			marked := func() {
				t.Helper()
				err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
					if _, err := tx.Exec(ctx, "SELECT set_config($1, 'on', true)", OwnWriteSetting); err != nil {
						return err
					}
					_, err := tx.Exec(ctx, "UPDATE app_outbox SET status = 'PENDING' WHERE id = 7")
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			marked()
			reloads("the relay's own write of a pending value over FAILED", 0)
			marked()
			reloads("the relay's own write of a pending value over a pending one", 0)
			mustExec(t, conn, "UPDATE app_outbox SET status = 'PROCESSING' WHERE id = 8")
			mustExec(t, conn, "UPDATE app_outbox SET status = 'PENDING' WHERE id = 8")
			reloads("an application's updates of a pending row the relay never parked", 0)
			// The relay parks event 7; its row reads PENDING while retried,
			// and the relay writes PENDING again at each failed attempt.
			mustExec(t, conn, "INSERT INTO outbox_delivery (event_id, source_table, topic, status, last_error) VALUES ('7', 'public.app_outbox', 'orders', 'FAILED', 'refused')")
			marked()
			reloads("the relay's own write of a pending value over a pending one, its event parked", 0)
			mustExec(t, conn, "UPDATE app_outbox SET status = 'PENDING' WHERE id = 7")
			reloads("a runbook's reset of a row being tried again", map[bool]int{false: 0, true: 1}[fromPending])
			for _, sql := range []string{"UPDATE app_outbox SET status = 'FAILED' WHERE id = 7", "UPDATE app_outbox SET status = 'PENDING' WHERE id = 7"} {
				mustExec(t, conn, sql)
			}
			reloads("a runbook's reset of a FAILED row (its parked event's row converted)", 1)
		})
	}
}

func mustExec(t *testing.T, conn *pgx.Conn, sql string) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// TestResetTriggerStaleForTheOtherMode: a trigger made before write_back's
// retrying value became a pending one, or before it stopped being one, is
// stale, and says why in those words.
func TestResetTriggerStaleForTheOtherMode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		made, wanted bool // FromPending
		want         string
	}{
		{false, true, "fires only when the status comes from a value that is not pending"},
		{true, false, "also fires on a pending value set over a pending one"},
	} {
		ctx, _, conn := pg.ConnectDB(t, 2*time.Minute, "CREATE TABLE app_outbox (id bigint, status text)")
		cfg := DefaultConfig()
		cfg.OutboxTable, cfg.SkipOutbox = "app_outbox", true
		cfg.Reset = Reset{IDColumn: "id", StatusColumn: "status", Pending: []string{"PENDING"}, FromPending: tc.made}
		if _, err := Apply(ctx, conn, cfg); err != nil {
			t.Fatal(err)
		}
		cfg.Reset.FromPending = tc.wanted
		have, err := LookupResetTrigger(ctx, conn, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !have.Exists || !strings.Contains(have.Stale, tc.want) {
			t.Errorf("made with FromPending %v, wanted %v: %+v, want stale saying %q", tc.made, tc.wanted, have, tc.want)
		}
	}
}

// TestResetTriggerSendsToEveryPublisher: the trigger of a table whose
// events go to Kafka and a webhook publisher re-arms each publisher's
// parked row of the event, or adds a reload row of that publisher, so
// that a reset sends the event again to both; with FromPending, a
// pending value set over a pending one re-arms only the publishers that
// parked the event. The trigger of a table Kafka alone sends passes no
// publishers, and one made before the table had another publisher is
// stale.
func TestResetTriggerSendsToEveryPublisher(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		fromPending bool
		from, to    string
		existing    map[string]string // the status of each publisher's row before
		want        []string          // "publisher status [reload]", by publisher then id
	}{
		{name: "delivered by both", from: "SENT", to: "PENDING", want: []string{"kafka FAILED reload", "partner FAILED reload"}},
		{name: "Kafka's parked", from: "FAILED", to: "PENDING", existing: map[string]string{"kafka": "FAILED"},
			want: []string{"kafka FAILED reload", "partner FAILED reload"}},
		{name: "the webhook's dead, Kafka's delivered", from: "DEAD", to: "PENDING", existing: map[string]string{"kafka": "DELIVERED", "partner": "DEAD"},
			want: []string{"kafka DELIVERED", "kafka FAILED reload", "partner FAILED reload"}},
		{name: "pending over pending, the webhook's parked", fromPending: true, from: "RETRYING", to: "PENDING",
			existing: map[string]string{"partner": "FAILED"}, want: []string{"partner FAILED reload"}},
		{name: "pending over pending, nothing parked", fromPending: true, from: "RETRYING", to: "PENDING"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, _, conn := pg.ConnectDB(t, 2*time.Minute, "CREATE TABLE app_outbox (id bigint PRIMARY KEY, status text)")
			cfg := DefaultConfig()
			cfg.OutboxTable, cfg.SkipOutbox = "app_outbox", true
			cfg.Reset = Reset{IDColumn: "id", StatusColumn: "status", Pending: []string{"PENDING", "RETRYING"}, FromPending: tc.fromPending,
				Publishers: []string{"kafka", "partner"}}
			if _, err := Apply(ctx, conn, cfg); err != nil {
				t.Fatal(err)
			}
			id := i + 1
			mustExec(t, conn, fmt.Sprintf("INSERT INTO app_outbox VALUES (%d, '%s')", id, tc.from))
			status := pgx.Identifier{cfg.StatusSchema, cfg.StatusTable}.Sanitize()
			for _, pub := range []string{"kafka", "partner"} {
				if st := tc.existing[pub]; st != "" {
					if _, err := conn.Exec(ctx, "INSERT INTO "+status+" (event_id, source_table, topic, record_value, status, attempts, last_error, commit_lsn, publisher)"+
						" VALUES ($1, $2, 'orders', 'v', $3, 5, 'refused', '0/10', $4)", fmt.Sprint(id), SourceTable(cfg), st, pub); err != nil {
						t.Fatal(err)
					}
				}
			}
			mustExec(t, conn, fmt.Sprintf("UPDATE app_outbox SET status = '%s' WHERE id = %d", tc.to, id))
			rows, _ := conn.Query(ctx, "SELECT publisher || ' ' || status || CASE WHEN reload THEN ' reload' ELSE '' END FROM "+status+
				" WHERE event_id = $1 ORDER BY publisher, id", fmt.Sprint(id))
			got, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("status rows: %q, want %q", got, tc.want)
			}
		})
	}
	t.Run("stale once a publisher is added", func(t *testing.T) {
		t.Parallel()
		ctx, _, conn := pg.ConnectDB(t, 2*time.Minute, "CREATE TABLE app_outbox (id bigint PRIMARY KEY, status text)")
		cfg := DefaultConfig()
		cfg.OutboxTable, cfg.SkipOutbox = "app_outbox", true
		cfg.Reset = Reset{IDColumn: "id", StatusColumn: "status", Pending: []string{"PENDING"}, Publishers: []string{"kafka"}}
		if _, err := Apply(ctx, conn, cfg); err != nil {
			t.Fatal(err)
		}
		if args := triggerArgList(cfg); len(args) != 2 {
			t.Errorf("Kafka alone: the trigger passes %q, want the id column and the table only", args)
		}
		cfg.Reset.Publishers = []string{"kafka", "partner"}
		have, err := LookupResetTrigger(ctx, conn, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !have.Exists || !strings.Contains(have.Stale, "partner") {
			t.Errorf("a publisher added: %+v, want stale naming the publishers", have)
		}
	})
}
