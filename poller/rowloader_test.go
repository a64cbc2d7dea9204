package poller

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/status"
)

// TestRowLoader reads an outbox row as it is now and makes it the record
// the stream would make; a row that is gone, a table the relay does not
// map, or a row that cannot become a record cannot be loaded, for good.
func TestRowLoader(t *testing.T) {
	t.Parallel()
	db := sharedPG.DB(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, sql := range []string{
		`CREATE TABLE app_outbox (id bigint PRIMARY KEY, topic text, order_id text, body jsonb, created timestamp NOT NULL DEFAULT '2026-11-24 12:00:00')`,
		`INSERT INTO app_outbox (id, topic, order_id, body) VALUES (1, 'orders', 'o-1', '{"a": 1}'), (2, 'bad topic!*', 'o-2', '{}')`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	m := decoder.Mapping{Schema: "public", Table: "app_outbox", IDColumn: "id", TopicColumn: "topic", KeyColumn: "order_id",
		PayloadColumn: "body", TimestampColumn: "created"}
	l, err := NewRowLoader(func() string { return db.URL() }, []string{m.Schema + "." + m.Table}, []decoder.Mapping{m})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	row, err := l.Load(ctx, status.Row{ID: 7, EventID: "1", SourceTable: "public.app_outbox", Reload: true})
	if err != nil {
		t.Fatal(err)
	}
	if row.ID != 7 || row.Topic != "orders" || string(row.Key) != "o-1" || string(row.Value) != `{"a": 1}` || row.Timestamp.UTC().Hour() != 12 {
		t.Fatalf("loaded %+v, want row 1's record (timestamp read as UTC)", row)
	}
	for _, r := range []status.Row{
		{EventID: "3", SourceTable: "public.app_outbox"},
		{EventID: "2", SourceTable: "public.app_outbox"},
		{EventID: "1", SourceTable: "public.other"},
		{EventID: "x", SourceTable: "public.app_outbox"}, // not a bigint
	} {
		if _, err := l.Load(ctx, r); !errors.Is(err, ErrUnloadable) {
			t.Errorf("load %s of %s: %v, want it unloadable", r.EventID, r.SourceTable, err)
		}
	}
	// The role is the test's own: roles are the cluster's.
	tenant := db.Name + "_tenant"
	RowLoaderUnderRowSecurity(t, conn, strings.Replace(db.URL(), "postgres@", tenant+"@", 1), tenant, m)
}

// RowLoaderUnderRowSecurity: a row that a row-level security policy hides
// from the relay's role (role tenant, of url) is not unloadable for good
// (DEAD) nor read as gone: its load fails, saying ALTER ROLE … BYPASSRLS,
// and it loads once the role bypasses row-level security.
func RowLoaderUnderRowSecurity(t *testing.T, conn *pgx.Conn, url, tenant string, m decoder.Mapping) {
	ctx := context.Background()
	for _, sql := range []string{
		`CREATE ROLE ` + tenant + ` LOGIN`, `GRANT SELECT ON app_outbox TO ` + tenant,
		`ALTER TABLE app_outbox ENABLE ROW LEVEL SECURITY`, `CREATE POLICY others ON app_outbox USING (order_id <> 'o-1')`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	l, err := NewRowLoader(func() string { return url }, []string{m.Schema + "." + m.Table}, []decoder.Mapping{m})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r := status.Row{ID: 7, EventID: "1", SourceTable: "public.app_outbox", Reload: true}
	_, err = l.Load(ctx, r)
	if err == nil || errors.Is(err, ErrUnloadable) || !strings.Contains(err.Error(), `ALTER ROLE "`+tenant+`" BYPASSRLS`) {
		t.Fatalf("load under a policy that hides the row: %v, want an error to retry naming ALTER ROLE %q BYPASSRLS", err, tenant)
	}
	if _, err := conn.Exec(ctx, `ALTER ROLE `+tenant+` BYPASSRLS`); err != nil {
		t.Fatal(err)
	}
	l.Close() // a new session reads the role's attribute
	if row, err := l.Load(ctx, r); err != nil || string(row.Key) != "o-1" {
		t.Fatalf("load after BYPASSRLS: %+v, %v", row, err)
	}
}

// TestRowLoaderRouted: a routed table's reload row names the topic it
// was adopted for, and is sent there; one whose tags no longer route it
// there is unloadable.
func TestRowLoaderRouted(t *testing.T) {
	t.Parallel()
	db := sharedPG.DB(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE events (position bigint PRIMARY KEY, tags text[], data json);
		INSERT INTO events VALUES (1, '{wallet_id=a,payment_id=p}', '{"n": 1}')`); err != nil {
		t.Fatal(err)
	}
	m := decoder.Mapping{Schema: "public", Table: "events", IDColumn: "position", PayloadColumn: "data", TagsColumn: "tags",
		Routes: []decoder.Route{{Topic: "wallet-events", RequiredTags: []string{"wallet_id"}}, {Topic: "payment-events", AnyOfTags: []string{"payment_id"}}}}
	l, err := NewRowLoader(func() string { return db.URL() }, []string{m.Schema + "." + m.Table}, []decoder.Mapping{m})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, topic := range []string{"wallet-events", "payment-events"} {
		row, err := l.Load(ctx, status.Row{EventID: "1", SourceTable: "public.events", Topic: topic, Reload: true})
		if err != nil || row.Topic != topic || string(row.Value) != `{"n": 1}` {
			t.Errorf("load for %s = %+v, %v; want the row's record to %s", topic, row, err, topic)
		}
	}
	for _, r := range []status.Row{
		{EventID: "1", SourceTable: "public.events", Topic: "other-events"}, // no longer routed there
		{EventID: "1", SourceTable: "public.events"},                        // two routes, no topic named
	} {
		if _, err := l.Load(ctx, r); !errors.Is(err, ErrUnloadable) {
			t.Errorf("load for %q: %v, want it unloadable", r.Topic, err)
		}
	}
}

// TestRowLoaderConcurrent: the pollers of several publishers load at
// once with one loader: each gets its rows' records, their headers its
// own (run with -race: the decoder is shared).
func TestRowLoaderConcurrent(t *testing.T) {
	t.Parallel()
	db := sharedPG.DB(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, sql := range []string{
		`CREATE TABLE hdr_outbox (id bigint PRIMARY KEY, kind text NOT NULL, body text NOT NULL)`,
		`INSERT INTO hdr_outbox SELECT i, 'kind-' || i, 'body-' || i FROM generate_series(1, 200) AS i`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	m := decoder.Mapping{Schema: "public", Table: "hdr_outbox", IDColumn: "id", PayloadColumn: "body", TopicTemplate: "t",
		HeaderColumns: []string{"kind"}, HeaderNames: []string{"kind"}}
	l, err := NewRowLoader(func() string { return db.URL() }, []string{"public.hdr_outbox"}, []decoder.Mapping{m})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for round := range 10 {
				var rows []status.Row
				for i := 1 + round*20; i <= 20+round*20; i++ {
					rows = append(rows, status.Row{EventID: strconv.Itoa(i), SourceTable: "public.hdr_outbox", Reload: true})
				}
				out, errs := l.LoadMany(ctx, rows)
				for i, r := range out {
					want := rows[i].EventID
					if errs[i] != nil || string(r.Value) != "body-"+want || len(r.Headers) != 2 || string(r.Headers[1].Value) != "kind-"+want {
						t.Errorf("row %s: %v, value %q, headers %v", want, errs[i], r.Value, r.Headers)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}
