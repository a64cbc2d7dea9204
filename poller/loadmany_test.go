package poller

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/status"
)

// TestRowLoaderLoadMany: LoadMany gives each row what Load gives it, one
// statement per table: rows of two tables (uuid and text ids) together,
// one gone among many (unloadable, the others loaded), one that cannot
// become a record, one of a table the relay does not map, one routed row
// adopted for two topics, an id quoted as an array element must be (a
// comma, a quote, a backslash, "NULL"), and an id that is not of the
// column's type among many (PostgreSQL refuses the statement: the rows
// are read one by one, and only that row is unloadable).
func TestRowLoaderLoadMany(t *testing.T) {
	t.Parallel()
	db := sharedPG.DB(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE u_outbox (id uuid PRIMARY KEY, topic text, k text, body text);
		INSERT INTO u_outbox SELECT md5(g::text)::uuid, CASE WHEN g = 7 THEN 'bad topic!*' ELSE 'orders' END, 'k' || g, 'v' || g FROM generate_series(1, 20) g;
		CREATE TABLE t_outbox (id text PRIMARY KEY, topic text, k text, body text);
		INSERT INTO t_outbox VALUES ('a,b', 'orders', 'k', '1'), ('q"u', 'orders', 'k', '2'), ('b\s', 'orders', 'k', '3'), ('NULL', 'orders', 'k', '4'), ('{x}', 'orders', 'k', '5');
		CREATE TABLE events (position bigint PRIMARY KEY, tags text[], data json);
		INSERT INTO events VALUES (1, '{wallet_id=a,payment_id=p}', '{"n": 1}'), (2, '{wallet_id=b}', '{"n": 2}')`); err != nil {
		t.Fatal(err)
	}
	mapping := func(table, id string) decoder.Mapping {
		return decoder.Mapping{Schema: "public", Table: table, IDColumn: id, TopicColumn: "topic", KeyColumn: "k", PayloadColumn: "body"}
	}
	routed := decoder.Mapping{Schema: "public", Table: "events", IDColumn: "position", PayloadColumn: "data", TagsColumn: "tags",
		Routes: []decoder.Route{{Topic: "wallet-events", RequiredTags: []string{"wallet_id"}}, {Topic: "payment-events", AnyOfTags: []string{"payment_id"}}}}
	ms := []decoder.Mapping{mapping("u_outbox", "id"), mapping("t_outbox", "id"), routed}
	l, err := NewRowLoader(func() string { return db.URL() }, []string{"public.u_outbox", "public.t_outbox", "public.events"}, ms)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	uuids := func(gs ...int) []status.Row {
		var rows []status.Row
		for _, g := range gs {
			var id string
			if err := conn.QueryRow(ctx, "SELECT md5($1::int::text)::uuid::text", g).Scan(&id); err != nil {
				t.Fatal(err)
			}
			rows = append(rows, status.Row{ID: int64(g), EventID: id, SourceTable: "public.u_outbox", Reload: true})
		}
		return rows
	}
	texts := func(ids ...string) []status.Row {
		var rows []status.Row
		for i, id := range ids {
			rows = append(rows, status.Row{ID: int64(100 + i), EventID: id, SourceTable: "public.t_outbox", Reload: true})
		}
		return rows
	}
	gone := status.Row{ID: 99, EventID: "00000000-0000-0000-0000-000000000000", SourceTable: "public.u_outbox", Reload: true}
	notUUID := status.Row{ID: 98, EventID: "not-a-uuid", SourceTable: "public.u_outbox", Reload: true}
	other := status.Row{ID: 97, EventID: "1", SourceTable: "public.other", Reload: true}
	wallet := status.Row{ID: 96, EventID: "1", SourceTable: "public.events", Topic: "wallet-events", Reload: true}
	payment := status.Row{ID: 95, EventID: "1", SourceTable: "public.events", Topic: "payment-events", Reload: true}
	unrouted := status.Row{ID: 94, EventID: "2", SourceTable: "public.events", Topic: "payment-events", Reload: true}
	cases := []struct {
		name       string
		rows       []status.Row
		unloadable []int64 // the ids of the rows unloadable for good
	}{
		{"uuids", uuids(1, 2, 3, 4, 5), nil},
		{"one gone among many", append(uuids(1, 2, 3), append([]status.Row{gone}, uuids(4, 5)...)...), []int64{99}},
		{"one that cannot become a record", uuids(6, 7, 8), []int64{7}},
		{"two tables and one not mapped", append(append(uuids(9, 10), texts("a,b", "q\"u")...), other), []int64{97}},
		{"ids quoted in the array", texts("a,b", "q\"u", "b\\s", "NULL", "{x}", "missing"), []int64{105}},
		{"a routed row for two topics", []status.Row{wallet, payment, unrouted}, []int64{94}},
		{"an id not of the column's type among many", append(uuids(11, 12), append([]status.Row{notUUID}, uuids(13, 7)...)...), []int64{98, 7}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, errs := l.LoadMany(ctx, c.rows)
			if len(out) != len(c.rows) || len(errs) != len(c.rows) {
				t.Fatalf("LoadMany of %d rows returned %d rows and %d errors", len(c.rows), len(out), len(errs))
			}
			var unloadable []int64
			for i, r := range c.rows {
				want, wantErr := l.Load(ctx, r)
				if errors.Is(errs[i], ErrUnloadable) {
					unloadable = append(unloadable, r.ID)
				}
				if fmt.Sprint(errs[i]) != fmt.Sprint(wantErr) || fmt.Sprintf("%+v", out[i]) != fmt.Sprintf("%+v", want) {
					t.Errorf("row %d (%s): LoadMany gave %+v, %v; Load gives %+v, %v", r.ID, r.EventID, out[i], errs[i], want, wantErr)
				}
				if wantErr == nil && (out[i].ID != r.ID || len(out[i].Value) == 0) {
					t.Errorf("row %d (%s): loaded %+v, want its record under its id", r.ID, r.EventID, out[i])
				}
			}
			if fmt.Sprint(unloadable) != fmt.Sprint(c.unloadable) {
				t.Errorf("unloadable rows %v, want %v", unloadable, c.unloadable)
			}
		})
	}
}
