package status

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/writeback"
)

// TestClaimWritesBackInSets: a claim of 200 adopted rows, delivered,
// writes their outbox rows with one UPDATE; with a trigger that refuses
// one of them, that row alone keeps its status (the others are written
// row by row), and every status row is DELIVERED all the same.
func TestClaimWritesBackInSets(t *testing.T) {
	t.Parallel()
	const n = 200
	cases := []struct {
		name       string
		frozen     int // the row a trigger refuses; 0: none
		statements int // UPDATE statements of the outbox table committed
	}{
		{"none refused", 0, 1},
		{"one refused among many", 77, n - 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool := newTestPool(t)
			for _, sql := range []string{
				`CREATE TABLE app_outbox (id uuid PRIMARY KEY, n int NOT NULL, status varchar(20) NOT NULL, sent_at timestamp, retry_count int NOT NULL DEFAULT 0)`,
				fmt.Sprintf(`INSERT INTO app_outbox SELECT md5(g::text)::uuid, g, 'NEW' FROM generate_series(1, %d) g`, n),
				`CREATE TABLE statements (n int)`,
				`CREATE FUNCTION count_statement() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO statements VALUES (1); RETURN NULL; END $$`,
				`CREATE TRIGGER count AFTER UPDATE ON app_outbox FOR EACH STATEMENT EXECUTE FUNCTION count_statement()`,
				fmt.Sprintf(`CREATE FUNCTION frozen() RETURNS trigger LANGUAGE plpgsql AS $$
					BEGIN IF NEW.n = %d THEN RAISE EXCEPTION 'row %d is frozen'; END IF; RETURN NEW; END $$`, c.frozen, c.frozen),
				`CREATE TRIGGER frozen BEFORE UPDATE ON app_outbox FOR EACH ROW EXECUTE FUNCTION frozen()`,
			} {
				if _, err := pool.Exec(ctx, sql); err != nil {
					t.Fatal(err)
				}
			}
			rows, err := writeback.NewRows([]writeback.Table{{Name: "app_outbox", IDColumn: "id", Columns: writeback.Columns{
				StatusColumn: "status", Delivered: "SENT", Failed: "FAILED", DeliveredAtColumn: "sent_at", AttemptsColumn: "retry_count",
				Pending: []string{"NEW"}}}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			store := NewStore(pool, "public", "outbox_delivery", WriteBack(rows))
			err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				_, err := store.Adopt(ctx, tx, Adoptable{Schema: "public", Name: "app_outbox", Source: "public.app_outbox",
					IDColumn: "id", StatusColumn: "status", Pending: []string{"NEW"}})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			claimed, err := store.Claim(ctx, n, func(ctx context.Context, due []Row) []Outcome {
				out := make([]Outcome, len(due))
				for i, r := range due {
					loaded := r
					loaded.Topic, loaded.Value, loaded.Reload = "orders", []byte(`{}`), false
					out[i] = Outcome{ID: r.ID, Delivered: true, Loaded: &loaded}
				}
				return out
			})
			if err != nil || claimed != n {
				t.Fatalf("Claim = %d, %v; want %d", claimed, err, n)
			}
			var sent, fresh, delivered, statements int
			var frozen string
			err = pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM app_outbox WHERE status = 'SENT' AND sent_at IS NOT NULL AND retry_count = 0),
				(SELECT count(*) FROM app_outbox WHERE status = 'NEW'), (SELECT coalesce(string_agg(n::text, ','), '') FROM app_outbox WHERE status = 'NEW'),
				(SELECT count(*) FROM outbox_delivery WHERE status = 'DELIVERED'), (SELECT count(*) FROM statements)`).Scan(&sent, &fresh, &frozen, &delivered, &statements)
			if err != nil {
				t.Fatal(err)
			}
			wantFrozen := ""
			if c.frozen != 0 {
				wantFrozen = fmt.Sprint(c.frozen)
			}
			if sent+fresh != n || frozen != wantFrozen || delivered != n || statements != c.statements || rows.Refused() != int64(fresh) {
				t.Fatalf("%d rows SENT, %d NEW (%q), %d status rows DELIVERED, %d statements, %d refused; want the rest SENT, NEW only %q, %d DELIVERED, %d statements, one refusal per NEW row",
					sent, fresh, frozen, delivered, statements, rows.Refused(), wantFrozen, n, c.statements)
			}
		})
	}
}
