package writeback

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdc-relay/cdc-relay/internal/outboxrow"
)

// TestRowsWriteMany: WriteMany leaves the rows as Write one after another
// leaves them, with one statement for the delivered rows when none
// refuses: a set of delivered rows (with their attempts and time); one row
// refused by a trigger among many (that row alone keeps its status, the
// others are written row by row, and one refusal is counted); other
// outcomes and an id named twice beside the delivered ones (written in
// their order); a table without the status column (every row refused, the
// transaction goes on).
func TestRowsWriteMany(t *testing.T) {
	t.Parallel()
	ctx, _, pool := startDB(t)
	exec(t, ctx, pool, `CREATE TABLE statements (tbl text);
		CREATE FUNCTION count_statement() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN INSERT INTO statements VALUES (TG_TABLE_NAME); RETURN NULL; END $$;
		CREATE FUNCTION frozen() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN IF NEW.id = 'e' THEN RAISE EXCEPTION 'row e is frozen'; END IF; RETURN NEW; END $$`)
	next := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	delivered := func(ids ...string) []outboxrow.RowOutcome {
		var outs []outboxrow.RowOutcome
		for i, id := range ids {
			outs = append(outs, outboxrow.RowOutcome{ID: id, O: outboxrow.Outcome{State: outboxrow.Delivered, Attempts: i % 3}})
		}
		return outs
	}
	failed := outboxrow.RowOutcome{ID: "f", O: outboxrow.Outcome{State: outboxrow.Failed, Reason: "UNKNOWN_TOPIC_OR_PARTITION", Attempts: 2, NextAttempt: next}}
	dead := outboxrow.RowOutcome{ID: "g", O: outboxrow.Outcome{State: outboxrow.Dead, Reason: "invalid topic", Attempts: 3}}
	aFailed := outboxrow.RowOutcome{ID: "a", O: outboxrow.Outcome{State: outboxrow.Failed, Reason: "later", Attempts: 4, NextAttempt: next}}
	cases := []struct {
		name       string
		trigger    bool // the frozen trigger refuses row e
		noStatus   bool // the table has no status column
		outs       []outboxrow.RowOutcome
		statements int // UPDATE statements committed by WriteMany
		refused    int64
	}{
		{"delivered rows", false, false, delivered("a", "b", "c", "d", "e", "x"), 1, 0},
		{"one row refused among many", true, false, delivered("a", "b", "c", "d", "e", "x"), 5, 1}, // row by row: x too, updating nothing
		{"other outcomes and an id twice", false, false, append(delivered("a", "b", "c", "d"), failed, dead, aFailed), 1 + 4, 0},
		{"no status column", false, true, delivered("a", "b", "c"), 0, 3},
		{"one delivered row", false, false, delivered("a"), 1, 0},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var tables [2]Table // written by WriteMany, by Write
			for k := range tables {
				name := fmt.Sprintf("outbox_%d_%d", i, k)
				status := "status varchar(20) NOT NULL DEFAULT 'PENDING',"
				if c.noStatus {
					status = ""
				}
				exec(t, ctx, pool, fmt.Sprintf(`CREATE TABLE %[1]s (id text PRIMARY KEY, %[2]s sent_at timestamp, error text, retries int NOT NULL DEFAULT 0, next_at timestamptz);
					INSERT INTO %[1]s (id) SELECT unnest('{a,b,c,d,e,f,g}'::text[]);
					CREATE TRIGGER count AFTER UPDATE ON %[1]s FOR EACH STATEMENT EXECUTE FUNCTION count_statement()`, name, status))
				if c.trigger {
					exec(t, ctx, pool, fmt.Sprintf("CREATE TRIGGER frozen BEFORE UPDATE ON %s FOR EACH ROW EXECUTE FUNCTION frozen()", name))
				}
				tables[k] = Table{Name: name, IDColumn: "id", Columns: Columns{StatusColumn: "status", Delivered: "SENT", Failed: "FAILED",
					Dead: "DEAD", DeliveredAtColumn: "sent_at", ErrorColumn: "error", AttemptsColumn: "retries", NextAttemptColumn: "next_at"}}
			}
			rows, err := NewRows(tables[:], nil)
			if err != nil {
				t.Fatal(err)
			}
			err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				if err := rows.WriteMany(ctx, tx, "public."+tables[0].Name, c.outs); err != nil {
					return fmt.Errorf("WriteMany: %w", err)
				}
				for _, o := range c.outs {
					if err := rows.Write(ctx, tx, "public."+tables[1].Name, o.ID, o.O); err != nil {
						return fmt.Errorf("Write: %w", err)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := rowStates(t, ctx, pool, tables[0].Name, c.noStatus), rowStates(t, ctx, pool, tables[1].Name, c.noStatus); !maps.Equal(got, want) {
				t.Errorf("WriteMany left\n%v\nWrite leaves\n%v", got, want)
			}
			if n := scalar[int](t, ctx, pool, "SELECT count(*) FROM statements WHERE tbl = $1", tables[0].Name); n != c.statements {
				t.Errorf("WriteMany committed %d UPDATE statements, want %d", n, c.statements)
			}
			if got := rows.Refused(); got != 2*c.refused {
				t.Errorf("%d refused by both, want %d each", got, c.refused)
			}
		})
	}
}

// rowStates returns each row of table as text: its id, status, whether
// sent_at is within a minute of now in UTC, error, retries and next_at.
func rowStates(t *testing.T, ctx context.Context, db *pgxpool.Pool, table string, noStatus bool) map[string]string {
	t.Helper()
	status := "status"
	if noStatus {
		status = "'-'"
	}
	r, err := db.Query(ctx, fmt.Sprintf(`SELECT id, concat_ws(' ', %s, coalesce((abs(extract(epoch FROM sent_at - (now() AT TIME ZONE 'UTC'))) < 60)::text, '-'),
		coalesce(error, '-'), retries, coalesce(to_char(next_at AT TIME ZONE 'UTC', 'HH24:MI'), '-')) FROM %s`, status, table))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	var id, s string
	if _, err := pgx.ForEachRow(r, []any{&id, &s}, func() error { out[id] = s; return nil }); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("no rows in %s", table)
	}
	return out
}
