package slot

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/outbox"
	"github.com/cdc-relay/cdc-relay/writeback"
)

// routedEvents is an event store's log routed to two topics, adopting by
// the route predicates given, aligned with its routes.
func routedEvents(routeAdopt ...string) outbox.Table {
	return outbox.Table{Mapping: decoder.Mapping{Schema: "public", Table: "events", IDColumn: "position", PayloadColumn: "data", TagsColumn: "tags",
		Routes: []decoder.Route{{Topic: "wallet-events", RequiredTags: []string{"wallet_id"}}, {Topic: "payment-events", RequiredTags: []string{"payment_id"}}}},
		RouteAdopt: routeAdopt}
}

// TestAdoptablesWithRoutePredicates: a table whose routes alone have
// predicates is adopted, with them; a slot created again over a gap
// adopts by none, the table's nor the routes', and the config it was
// made from keeps them.
func TestAdoptablesWithRoutePredicates(t *testing.T) {
	cfg := defaultConfig()
	plain := cfg.Tables[0]
	pending := plain
	pending.Mapping.Table, pending.WriteBack = "pending", &writeback.Columns{StatusColumn: "status", Pending: []string{"NEW"}}
	cfg.Tables = []outbox.Table{plain, routedEvents("", "position > 550"), pending}
	got, err := cfg.adoptables()
	if err != nil || len(got) != 2 || got[0].Source != "public.events" || !reflect.DeepEqual(got[0].RouteWhere, []string{"", "position > 550"}) || got[1].Source != "public.pending" {
		t.Fatalf("adoptables %+v, %v; want public.events with its route predicates, then public.pending", got, err)
	}
	if !cfg.Adopts() {
		t.Error("Adopts() = false with a route predicate")
	}
	again := cfg.withoutAdopt()
	if got, err := again.adoptables(); again.Adopts() || err != nil || len(got) != 1 || got[0].Source != "public.pending" {
		t.Errorf("withoutAdopt: Adopts() = %v, adoptables %+v, %v; want none by a predicate, the pending table's rows still", again.Adopts(), got, err)
	}
	if cfg.Tables[1].RouteAdopt[1] != "position > 550" {
		t.Errorf("withoutAdopt changed the config it was made from: %q", cfg.Tables[1].RouteAdopt)
	}
}

// TestCheckAdoptCountsEachRoutePredicate: CheckAdopt counts the rows the
// route predicates select, each route's among the rows of its tags, and
// refuses one that selects none and is NULL on the newest row (a
// subquery that found no row), naming the route and its topic, but not
// one false there (its topic is caught up); the
// table's predicate is counted for the routes without one of their own,
// and not when every route has one.
func TestCheckAdoptCountsEachRoutePredicate(t *testing.T) {
	t.Parallel()
	db := sharedPG.DB(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE events (position bigint PRIMARY KEY, data json NOT NULL DEFAULT '{}', tags text[]);
		INSERT INTO events (position, tags) SELECT i, CASE WHEN i <= 10 THEN '{wallet_id=w}' ELSE '{wallet_id=w,payment_id=p}' END::text[]
			FROM generate_series(1, 20) AS i;
		CREATE TABLE outbox_topic_progress (topic text, publisher text, last_position bigint);
		INSERT INTO outbox_topic_progress VALUES ('wallet-events', 'p', 15), ('payment-events', 'p', 5)`); err != nil {
		t.Fatal(err)
	}
	progress := func(topic string) string {
		return "position > (SELECT last_position FROM outbox_topic_progress WHERE topic = '" + topic + "' AND publisher = 'p')"
	}
	withTable := func(where string, t outbox.Table) outbox.Table { t.Adopt = where; return t }
	for _, tc := range []struct {
		name  string
		table outbox.Table
		want  int64  // rows
		err   string // the refusal, if any
	}{
		{"each route's", routedEvents(progress("wallet-events"), progress("payment-events")), 5 + 10, ""},
		{"a route's and the table's for the other", withTable("position > 18", routedEvents(progress("wallet-events"))), 5 + 2, ""},
		{"the table's used by no route, selecting none", withTable("position > 100", routedEvents(progress("wallet-events"), progress("payment-events"))), 15, ""},
		{"a route's selecting none of its tags, false on the newest row: caught up", routedEvents(progress("wallet-events"), "position <= 10"), 5, ""},
		{"a route's whose topic is caught up", routedEvents(progress("wallet-events"), "position > 20"), 5, ""},
		{"a route's NULL on the newest row", routedEvents(progress("wallet-events"), "position > NULL::bigint"), 0,
			"adopt the rows of public.events: routes[1].adopt (topic payment-events) selects no row that the route sends to payment-events, and is NULL on the table's newest row (position > NULL::bigint)"},
		{"a misspelt topic", routedEvents(progress("wallet_events"), progress("payment-events")), 0,
			"adopt the rows of public.events: routes[0].adopt (topic wallet-events) selects no row"},
		{"the table's selecting none for the routes without one", withTable("position > 100", routedEvents(progress("wallet-events"))), 0,
			"adopt the rows of public.events: the predicate selects no row (position > 100)"},
	} {
		cfg := defaultConfig()
		cfg.Tables = []outbox.Table{tc.table}
		n, err := CheckAdopt(ctx, conn, cfg)
		var nothing *NothingToAdoptError
		switch {
		case tc.err == "" && (err != nil || n != tc.want):
			t.Errorf("%s: CheckAdopt = %d, %v; want %d", tc.name, n, err, tc.want)
		case tc.err != "" && (!errors.As(err, &nothing) || !strings.HasPrefix(err.Error(), tc.err)):
			t.Errorf("%s: CheckAdopt = %d, %v; want a *NothingToAdoptError %q…", tc.name, n, err, tc.err)
		}
	}
}
