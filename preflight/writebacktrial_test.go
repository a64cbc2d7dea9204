package preflight

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// trialSchema is the database of TestTryWriteBack: tables whose CHECK
// constraints, triggers and deferred constraints take some write-back
// values and refuse others, an empty table, an enum status column, a
// partitioned table (the same physical place in each partition); trialRole
// adds a role that may not update.
var trialSchema = []string{
	`CREATE TABLE guarded (id bigserial PRIMARY KEY, body text,
		status text NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'SENT', 'DEAD')),
		sent_at timestamptz, err varchar(8), tries smallint NOT NULL DEFAULT 0 CHECK (tries >= 0), next_at timestamp)`,
	`INSERT INTO guarded (body) VALUES ('a'), ('b')`,
	`CREATE TABLE triggered (id bigserial PRIMARY KEY, body text, status text NOT NULL DEFAULT 'PENDING', err text)`,
	`CREATE FUNCTION no_failed() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.status = 'FAILED' THEN RAISE EXCEPTION 'status FAILED is not allowed, %', NEW.err; END IF;
			RETURN NEW;
		END$$`,
	`CREATE TRIGGER no_failed BEFORE UPDATE ON triggered FOR EACH ROW EXECUTE FUNCTION no_failed()`,
	`INSERT INTO triggered (body) VALUES ('a')`,
	`CREATE TABLE deferred (id bigserial PRIMARY KEY, body text, status text NOT NULL UNIQUE DEFERRABLE INITIALLY DEFERRED)`,
	`INSERT INTO deferred (body, status) VALUES ('a', 'PENDING'), ('b', 'SENT')`,
	`CREATE TABLE empty (id bigserial PRIMARY KEY, body text, status text)`,
	`CREATE TYPE state AS ENUM ('NEW', 'SENT', 'FAILED')`,
	`CREATE TABLE enumed (id bigserial PRIMARY KEY, body text, status state NOT NULL DEFAULT 'NEW')`,
	`INSERT INTO enumed (body) VALUES ('a')`,
	`CREATE TABLE parts (id bigint NOT NULL, region text NOT NULL, body text, status text NOT NULL DEFAULT 'PENDING') PARTITION BY LIST (region)`,
	`CREATE TABLE parts_eu PARTITION OF parts FOR VALUES IN ('eu')`,
	`CREATE TABLE parts_us PARTITION OF parts FOR VALUES IN ('us')`,
	`INSERT INTO parts VALUES (1, 'eu', 'a'), (2, 'us', 'b')`,
}

// trialRole makes the role of TestTryWriteBack that may not update: one
// of the test's own, as roles are the cluster's.
func trialRole(ctx context.Context, t *testing.T, conn *pgx.Conn, name string) {
	t.Helper()
	for _, sql := range []string{`CREATE ROLE ` + name, `GRANT SELECT ON guarded TO ` + name} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
}

func TestTryWriteBack(t *testing.T) {
	t.Parallel()
	ctx, db, conn := pg.ConnectDB(t, 2*time.Minute, trialSchema...)
	reader := db.Name + "_reader"
	trialRole(ctx, t, conn, reader)
	// check-config's session is read-only: the trial asks for read-write.
	if _, err := conn.Exec(ctx, "SET default_transaction_read_only = on"); err != nil {
		t.Fatal(err)
	}
	before := tableTexts(ctx, t, conn)
	tests := []struct {
		name     string
		yaml     string
		role     string // SET ROLE during the trial
		want     []string
		accepted []string
		untried  string
	}{
		{name: "every value taken, with every column", yaml: "\n  - {table: guarded, id: id, value: body, topic: t, write_back: {status_column: status, delivered: SENT, failed: PENDING, dead: DEAD, delivered_at_column: sent_at, error_column: err, attempts_column: tries, next_attempt_column: next_at}}\n",
			accepted: []string{`delivered "SENT"`, `failed "PENDING"`, `dead "DEAD"`}},
		{name: "a CHECK refuses the delivered value, then the failed one", yaml: "\n  - {table: guarded, id: id, value: body, topic: t, write_back: {status_column: status, delivered: DELIVERED, failed: FAILED, dead: DEAD}}\n",
			want: []string{
				`public.guarded|status|the table refuses write_back.delivered "DELIVERED" (tried on one row, rolled back): ERROR: new row for relation "guarded" violates check constraint "guarded_status_check" (SQLSTATE 23514): change write_back.delivered, or the table's constraint or trigger`,
				`public.guarded|status|the table refuses write_back.failed "FAILED" (tried on one row, rolled back): ERROR: new row for relation "guarded" violates check constraint "guarded_status_check" (SQLSTATE 23514): change write_back.failed, or the table's constraint or trigger`,
			}, accepted: []string{`dead "DEAD"`}},
		{name: "a trigger refuses the failed value", yaml: "\n  - {table: triggered, id: id, value: body, topic: t, write_back: {status_column: status, delivered: SENT, failed: FAILED, error_column: err}}\n",
			want: []string{
				`public.triggered|status|the table refuses write_back.failed "FAILED" (tried on one row, rolled back): ERROR: status FAILED is not allowed, check-config: a sample reason (SQLSTATE P0001): change write_back.failed, or the table's constraint or trigger`,
			}, accepted: []string{`delivered "SENT"`}},
		{name: "a deferred constraint is checked at once", yaml: "\n  - {table: deferred, id: id, value: body, topic: t, write_back: {status_column: status, delivered: SENT, failed: FAILED}}\n",
			want: []string{
				`public.deferred|status|the table refuses write_back.delivered "SENT" (tried on one row, rolled back): ERROR: duplicate key value violates unique constraint "deferred_status_key" (SQLSTATE 23505)`,
			}, accepted: []string{`failed "FAILED"`}},
		{name: "an enum status column", yaml: "\n  - {table: enumed, id: id, value: body, topic: t, write_back: {status_column: status, delivered: SENT, failed: FAILED}}\n",
			accepted: []string{`delivered "SENT"`, `failed "FAILED"`}},
		{name: "one row of a partitioned table", yaml: "\n  - {table: parts, id: id, value: body, topic: t, write_back: {status_column: status, delivered: SENT, failed: FAILED}}\n",
			accepted: []string{`delivered "SENT"`, `failed "FAILED"`}},
		{name: "an empty table", yaml: "\n  - {table: empty, id: id, value: body, topic: t, write_back: {status_column: status, delivered: SENT, failed: FAILED}}\n",
			untried: "the table has no row to try them on"},
		{name: "no write_back", yaml: "\n  - {table: guarded, id: id, value: body, topic: t}\n"},
		{name: "a role that may not update", role: reader, yaml: "\n  - {table: guarded, id: id, value: body, topic: t, write_back: {status_column: status, delivered: SENT, failed: DEAD}}\n",
			want: []string{`public.guarded|status|write-back may not update the table: ERROR: permission denied for table guarded (SQLSTATE 42501): GRANT UPDATE on the write-back columns TO the relay's role`}},
		{name: "a role that may not read", role: reader, yaml: "\n  - {table: triggered, id: id, value: body, topic: t, write_back: {status_column: status, delivered: SENT, failed: DEAD}}\n",
			untried: "this role may not read the table"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.role != "" {
				if _, err := conn.Exec(ctx, "SET ROLE "+tc.role); err != nil {
					t.Fatal(err)
				}
				defer func() {
					if _, err := conn.Exec(ctx, "RESET ROLE"); err != nil {
						t.Fatal(err)
					}
				}()
			}
			res, err := TryWriteBack(ctx, conn, tables(t, tc.yaml)[0])
			if err != nil {
				t.Fatal(err)
			}
			got := problemStrings(res.Problems)
			if len(got) != len(tc.want) {
				t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("problem %d:\n%s\nwant\n%s…", i, got[i], w)
				}
			}
			if strings.Join(res.Accepted, ", ") != strings.Join(tc.accepted, ", ") || res.Untried != tc.untried {
				t.Errorf("accepted %q, untried %q; want %q, %q", res.Accepted, res.Untried, tc.accepted, tc.untried)
			}
			if s := conn.PgConn().TxStatus(); s != 'I' {
				t.Errorf("the connection is left in a transaction (status %c)", s)
			}
		})
	}
	if after := tableTexts(ctx, t, conn); after != before {
		t.Errorf("the trial changed the tables:\nbefore %s\nafter  %s", before, after)
	}
	var readOnly string
	if err := conn.QueryRow(ctx, "SHOW transaction_read_only").Scan(&readOnly); err != nil || readOnly != "on" {
		t.Errorf("after the trial, transaction_read_only = %q (%v), want on", readOnly, err)
	}
}

// TestTryWriteBackLockedRow: a row another transaction holds is waited
// for at most the lock timeout, and the values are then said to be
// untried, not refused.
//
// It measures the wait, so it does not run beside the package's other
// tests (no t.Parallel: they start when it has ended).
func TestTryWriteBackLockedRow(t *testing.T) {
	ctx, db, conn := pg.ConnectDB(t, 2*time.Minute, trialSchema...)
	other, err := pgx.Connect(ctx, db.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(context.Background())
	tx, err := other.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(ctx, "SELECT * FROM guarded FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := TryWriteBack(ctx, conn, tables(t, "\n  - {table: guarded, id: id, value: body, topic: t, write_back: {status_column: status, delivered: SENT, failed: DEAD}}\n")[0])
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if len(res.Problems) != 0 || len(res.Accepted) != 0 || res.Untried != "the row they were tried on stayed locked by another transaction for 2s" {
		t.Errorf("with the row locked: %+v", res)
	}
	if took < trialLockTimeout || took > trialLockTimeout+5*time.Second {
		t.Errorf("the trial took %s, want about the lock timeout (%s)", took, trialLockTimeout)
	}
}

// tableTexts is every row of the trial's tables, as text, in order.
func tableTexts(ctx context.Context, t *testing.T, conn *pgx.Conn) string {
	t.Helper()
	var s string
	err := conn.QueryRow(ctx, `SELECT concat_ws(' | ',
		(SELECT string_agg(g::text, ',' ORDER BY id) FROM guarded g),
		(SELECT string_agg(r::text, ',' ORDER BY id) FROM triggered r),
		(SELECT string_agg(d::text, ',' ORDER BY id) FROM deferred d),
		(SELECT string_agg(p::text, ',' ORDER BY id) FROM parts p),
		(SELECT string_agg(e::text, ',' ORDER BY id) FROM enumed e),
		(SELECT count(*)::text FROM empty))`).Scan(&s)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
