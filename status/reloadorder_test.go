package status

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdc-relay/cdc-relay/decoder"
)

// TestAdoptedRowsHaveTheirKeys: an adopted row's status row has the
// record key and topic its event will have, as the decoder reads them
// (a bytea key's bytes, another type's text; the topic column, else the
// template), so that the relay can hold its key; none without a key
// column, or when the table lacks it.
func TestAdoptedRowsHaveTheirKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newTestPool(t)
	if _, err := pool.Exec(ctx, `CREATE DOMAIN raw_key AS bytea;
		CREATE TABLE ord (id bigint PRIMARY KEY, status text, agg uuid, agg_b raw_key, raw bytea, code char(4), kind text, region text);
		INSERT INTO ord VALUES (1, 'NEW', '7f1c1c84-5b35-4f36-a1b7-2f1a3b1f0001', '\x00ff', '\x00ff', 'ab', 'Invoice', 'eu'),
			(2, 'NEW', '7f1c1c84-5b35-4f36-a1b7-2f1a3b1f0002', '\x41', '\x41', 'c', NULL, 'us'),
			(3, 'SENT', '7f1c1c84-5b35-4f36-a1b7-2f1a3b1f0003', '\x42', '\x42', 'd', 'Order', 'eu')`); err != nil {
		t.Fatal(err)
	}
	base := Adoptable{Schema: "public", Name: "ord", Source: "public.ord", IDColumn: "id", StatusColumn: "status", Pending: []string{"NEW"}}
	for _, tc := range []struct {
		name string
		with func(*Adoptable)
		want []string // event_id topic key(hex), in id order
	}{
		{"a uuid key and a topic column", func(a *Adoptable) { a.KeyColumn, a.TopicColumn = "agg", "kind" }, []string{
			"1 Invoice " + hex.EncodeToString([]byte("7f1c1c84-5b35-4f36-a1b7-2f1a3b1f0001")),
			"2  " + hex.EncodeToString([]byte("7f1c1c84-5b35-4f36-a1b7-2f1a3b1f0002"))}},
		{"a bytea key, the template where the topic column is NULL", func(a *Adoptable) {
			a.KeyColumn, a.TopicColumn, a.TopicTemplate = "raw", "kind", "{region}.events"
		}, []string{"1 Invoice 00ff", "2 us.events 41"}},
		{"a domain over bytea: its text, as the stream has it", func(a *Adoptable) { a.KeyColumn, a.TopicTemplate = "agg_b", "outbox.{kind}" }, []string{
			"1 outbox.Invoice " + hex.EncodeToString([]byte(`\x00ff`)), "2  " + hex.EncodeToString([]byte(`\x41`))}},
		{"a char(n) key, padded", func(a *Adoptable) { a.KeyColumn = "code" }, []string{
			"1  " + hex.EncodeToString([]byte("ab  ")), "2  " + hex.EncodeToString([]byte("c   "))}},
		{"no key column", func(a *Adoptable) { a.TopicTemplate = "orders" }, []string{"1 orders ", "2 orders "}},
		{"columns the table lacks", func(a *Adoptable) { a.KeyColumn, a.TopicColumn, a.TopicTemplate = "missing", "gone", "x.{gone}" }, []string{"1  ", "2  "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := base
			tc.with(&a)
			if got := adoptedKeys(ctx, t, pool, a); strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("adopted %q, want %q", got, tc.want)
			}
		})
	}
}

// adoptedKeys empties the status table, adopts a's rows and returns them
// as "event_id topic key", the key in hex, in id order.
func adoptedKeys(ctx context.Context, t *testing.T, pool *pgxpool.Pool, a Adoptable) []string {
	t.Helper()
	if _, err := pool.Exec(ctx, "TRUNCATE outbox_delivery"); err != nil {
		t.Fatal(err)
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, err := NewStore(pool, "public", "outbox_delivery").Adopt(ctx, tx, a)
		return err
	})
	if err != nil {
		t.Fatalf("Adopt: %v", err)
	}
	rows, _ := pool.Query(ctx, `SELECT event_id || ' ' || topic || ' ' || coalesce(encode(record_key, 'hex'), '') FROM outbox_delivery ORDER BY id`)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestReloadRowsHoldTheirKeys: a reload row with a key (adopted, a reset
// parked row) is claimed in its key's order: while it is not deliverable
// (not due, DEAD), neither the later reload rows of its key nor the rows
// parked behind it are claimed, whatever index reads them; once it is,
// the claim takes them all, in id order, as one key.
func TestReloadRowsHoldTheirKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, pool := claimTestStore(t)
	if _, err := pool.Exec(ctx, `CREATE TABLE ord (id bigint PRIMARY KEY, status text, agg text);
		INSERT INTO ord VALUES (1, 'NEW', 'k1'), (2, 'NEW', 'k2'), (3, 'NEW', 'k1'), (4, 'NEW', 'k3')`); err != nil {
		t.Fatal(err)
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, err := store.Adopt(ctx, tx, Adoptable{Schema: "public", Name: "ord", Source: "public.ord", IDColumn: "id",
			StatusColumn: "status", Pending: []string{"NEW"}, KeyColumn: "agg", TopicTemplate: "orders"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// The stream parked later events of k1, k2 and k3 behind them.
	for i, key := range []string{"k1", "k2", "k3"} {
		ev := &decoder.Event{ID: []byte("w-" + key), Topic: "orders", Key: []byte(key), Value: []byte(`{}`), CommitLSN: uint64(0x100 * (i + 1))}
		if err := store.Waiting(ctx, ev, errors.New("waits for an adopted event of its key")); err != nil {
			t.Fatal(err)
		}
	}
	// k1's first adopted row is not due; k3's is DEAD.
	for _, sql := range []string{
		"UPDATE outbox_delivery SET next_attempt_at = now() + interval '1 hour' WHERE event_id = '1'",
		"UPDATE outbox_delivery SET status = 'DEAD' WHERE event_id = '4'",
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	claim := func() (got []string) {
		t.Helper()
		_, err := store.Claim(ctx, 100, func(_ context.Context, rows []Row) []Outcome {
			var out []Outcome
			for _, r := range rows {
				got = append(got, fmt.Sprintf("%s/%s", r.EventID, r.Key))
				out = append(out, Outcome{ID: r.ID, Delivered: true})
			}
			return out
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got, want := strings.Join(claim(), " "), "2/k2 w-k2/k2"; got != want {
		t.Fatalf("claimed %q while k1's first row is not due and k3's is DEAD, want %q", got, want)
	}
	if _, err := pool.Exec(ctx, "UPDATE outbox_delivery SET next_attempt_at = now() WHERE event_id = '1'"); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(claim(), " "), "1/k1 3/k1 w-k1/k1"; got != want {
		t.Fatalf("claimed %q once k1's first row is due, want %q", got, want)
	}
	still, err := store.StillHeld(ctx, []Key{{"orders", "k1"}, {"orders", "k3"}})
	if err != nil || len(still) != 1 || still[0].Key != "k3" {
		t.Fatalf("StillHeld %v, %v; want k3 alone, held by its DEAD adopted row", still, err)
	}
}

// TestAdoptedInTheOrderWritten: rows whose id is not of an integer type
// (a uuid) are adopted in the order of their timestamp column, and those
// of one timestamp (one transaction's, with now()) in the order written;
// without a timestamp column, in the order written; an integer id is
// that order itself.
func TestAdoptedInTheOrderWritten(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newTestPool(t)
	if _, err := pool.Exec(ctx, `CREATE TABLE uu (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), n int, status text, created_at timestamptz DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	// Two transactions of 30 rows each, the second's timestamp earlier.
	for _, sql := range []string{
		`INSERT INTO uu (n, status, created_at) SELECT i, 'NEW', '2026-11-29 12:00:00+00' FROM generate_series(31, 60) AS i`,
		`INSERT INTO uu (n, status, created_at) SELECT i, 'NEW', '2026-11-29 11:00:00+00' FROM generate_series(1, 30) AS i`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	base := Adoptable{Schema: "public", Name: "uu", Source: "public.uu", IDColumn: "id", StatusColumn: "status", Pending: []string{"NEW"}, KeyColumn: "n"}
	for _, tc := range []struct {
		name string
		ts   string
		want func(i int) int // the n of the i-th adopted row
	}{
		{"by timestamp, then as written", "created_at", func(i int) int { return i + 1 }},
		{"as written, without a timestamp column", "", func(i int) int { return (i+30)%60 + 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := base
			a.TimestampColumn = tc.ts
			got := adoptedKeys(ctx, t, pool, a)
			if len(got) != 60 {
				t.Fatalf("adopted %d rows, want 60", len(got))
			}
			for i, g := range got {
				if want := hex.EncodeToString([]byte(fmt.Sprint(tc.want(i)))); !strings.HasSuffix(g, " "+want) {
					t.Fatalf("adopted row %d is %q, want n %d:\n%q", i, g, tc.want(i), got)
				}
			}
		})
	}
}
