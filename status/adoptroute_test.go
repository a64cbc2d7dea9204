package status

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdc-relay/cdc-relay/decoder"
)

// progressOf is the predicate of an event store's poller that kept its
// last position per topic: the events of topic after it.
func progressOf(topic string) string {
	return "position > (SELECT last_position FROM outbox_topic_progress WHERE topic = '" + topic + "' AND publisher = 'KafkaPublisher')"
}

// twoRoutes are the event store's routes: every event of
// newRoutedPool's table matches both but those of 701 to 705.
var twoRoutes = []decoder.Route{
	{Topic: "wallet-events", RequiredTags: []string{"wallet_id"}},
	{Topic: "payment-events", AnyOfTags: []string{"payment_id", "transfer_id"}},
}

// TestAdoptByRoutePredicate: a route with a predicate of its own adopts,
// for its topic, exactly the rows it selects, each once, whatever the
// other routes select; a route without one adopts what the table's
// predicate selects, or nothing without one; a pending row is adopted
// for every route it matches.
func TestAdoptByRoutePredicate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newRoutedPool(t)
	base := Adoptable{Schema: "public", Name: "events", Source: "public.events", IDColumn: "position", TagsColumn: "tags", Routes: twoRoutes}
	for _, tc := range []struct {
		name string
		with func(*Adoptable)
		want []string // per topic, in the order of the names: "topic: its positions"
	}{
		{"each topic after its own last position", func(a *Adoptable) {
			a.RouteWhere = []string{progressOf("wallet-events"), progressOf("payment-events")}
		}, []string{"payment-events: 551-700", "wallet-events: 601-700"}},
		{"a route without a predicate, the table none: nothing for it", func(a *Adoptable) {
			a.RouteWhere = []string{progressOf("wallet-events"), ""}
		}, []string{"wallet-events: 601-700"}},
		{"the second route's only", func(a *Adoptable) {
			a.RouteWhere = []string{"", progressOf("payment-events")}
		}, []string{"payment-events: 551-700"}},
		{"the first route's only, the list shorter than the routes", func(a *Adoptable) {
			a.RouteWhere = []string{progressOf("wallet-events")}
		}, []string{"wallet-events: 601-700"}},
		{"pending rows for every route they match", func(a *Adoptable) {
			a.StatusColumn, a.Pending, a.RouteWhere = "status", []string{"NEW"}, []string{progressOf("wallet-events"), ""}
		}, []string{"payment-events: 10 20", "wallet-events: 10 20 601-700"}},
		{"a route without a predicate falls back to the table's", func(a *Adoptable) {
			a.Where, a.RouteWhere = "position > 650", []string{progressOf("wallet-events"), ""}
		}, []string{"payment-events: 651-700", "wallet-events: 601-700"}},
		{"predicates ending in a comment", func(a *Adoptable) {
			a.Where = "position > 690 -- the table's"
			a.RouteWhere = []string{"", progressOf("payment-events") + " -- the old poller's progress"}
		}, []string{"payment-events: 551-700", "wallet-events: 691-700"}},
		{"a missing progress row selects nothing for its route only", func(a *Adoptable) {
			a.RouteWhere = []string{progressOf("wallet-event"), progressOf("payment-events")}
		}, []string{"payment-events: 551-700"}},
		{"two routes of one topic, each selecting: once", func(a *Adoptable) {
			a.Routes = append(twoRoutes[:2:2], decoder.Route{Topic: "wallet-events", AnyOfTags: []string{"payment_id"}})
			a.Where, a.RouteWhere = "position > 680", []string{progressOf("wallet-events"), progressOf("payment-events")}
		}, []string{"payment-events: 551-700", "wallet-events: 601-700"}},
		{"the table's used by no route: not run", func(a *Adoptable) {
			a.Where = "1 / (position - position) = 1" // a division by zero, were it run
			a.RouteWhere = []string{progressOf("wallet-events"), progressOf("payment-events")}
		}, []string{"payment-events: 551-700", "wallet-events: 601-700"}},
		{"without route predicates, as before", func(a *Adoptable) {
			a.Where = "position > 695"
		}, []string{"payment-events: 696-700", "wallet-events: 696-700"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := base
			tc.with(&a)
			adopted := len(adoptOnce(ctx, t, pool, a))
			if got := adoptedPerTopic(ctx, t, pool); strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("adopted\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			a.Pending = nil
			pending := 0
			if a.StatusColumn != "" {
				pending = 4 // 10 and 20, for two topics, not selected by the predicate
			}
			if n, err := CountAdopt(ctx, pool, a); err != nil || n != int64(adopted-pending) {
				t.Errorf("CountAdopt = %d, %v; want %d", n, err, adopted-pending)
			}
		})
	}
}

// TestAdoptPredicates: Predicates lists the table's predicate, when a
// route uses it, then each route's, each with an Adoptable that counts
// what it alone adopts.
func TestAdoptPredicates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newRoutedPool(t)
	base := Adoptable{Schema: "public", Name: "events", Source: "public.events", IDColumn: "position", TagsColumn: "tags", Routes: twoRoutes,
		StatusColumn: "status", Pending: []string{"NEW"}}
	for _, tc := range []struct {
		name string
		with func(*Adoptable)
		want []string // "name: count"
	}{
		{"none", func(*Adoptable) {}, nil},
		{"the table's", func(a *Adoptable) { a.Where = "position > 650" }, []string{"adopt: 100"}},
		{"the table's and a route's", func(a *Adoptable) {
			a.Where, a.RouteWhere = "position > 650", []string{progressOf("wallet-events")}
		}, []string{"adopt: 50", "routes[0].adopt (topic wallet-events): 100"}},
		{"the routes', the table's used by none", func(a *Adoptable) {
			a.Where, a.RouteWhere = "position > 650", []string{progressOf("wallet-events"), progressOf("payment-events")}
		}, []string{"routes[0].adopt (topic wallet-events): 100", "routes[1].adopt (topic payment-events): 150"}},
		{"a table without routes", func(a *Adoptable) {
			a.Routes, a.TagsColumn, a.Where = nil, "", "position > 650"
		}, []string{"adopt: 55"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := base
			tc.with(&a)
			var got []string
			for _, p := range a.Predicates() {
				if len(p.Adoptable.Pending) > 0 || len(p.Adoptable.RouteWhere) > 0 {
					t.Errorf("%s: %+v, want neither pending values nor route predicates", p.Name(), p.Adoptable)
				}
				n, err := CountAdopt(ctx, pool, p.Adoptable)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, fmt.Sprintf("%s: %d", p.Name(), n))
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("predicates %q, want %q", got, tc.want)
			}
		})
	}
}

// TestCheckAdoptNamesTheRoutePredicate: a route's predicate PostgreSQL
// refuses is named in the refusal; a refusal that is no predicate's
// (jsonb tags) names none.
func TestCheckAdoptNamesTheRoutePredicate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newRoutedPool(t)
	a := Adoptable{Schema: "public", Name: "events", Source: "public.events", IDColumn: "position", TagsColumn: "tags", Routes: twoRoutes,
		Where: "position > 1", RouteWhere: []string{"", "postion > 4000"}}
	err := CheckAdopt(ctx, pool, a)
	if want := `adopt the rows of public.events: routes[1].adopt (topic payment-events): ERROR: column "postion" does not exist`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("CheckAdopt = %v, want %q…", err, want)
	}
	a.Where, a.RouteWhere = "postion > 1", []string{"", "position > 4000"}
	if err := CheckAdopt(ctx, pool, a); err == nil || !strings.Contains(err.Error(), `public.events: adopt: ERROR: column "postion"`) {
		t.Errorf("CheckAdopt = %v, want the table's adopt named", err)
	}
	if _, err := pool.Exec(ctx, "CREATE TABLE jsonb_events (position bigint, tags jsonb)"); err != nil {
		t.Fatal(err)
	}
	a.Name, a.Where, a.RouteWhere = "jsonb_events", "", []string{"position > 1"}
	err = CheckAdopt(ctx, pool, a)
	if err == nil || !strings.Contains(err.Error(), "text[] or varchar[]") || strings.Contains(err.Error(), "routes[0]") {
		t.Errorf("CheckAdopt of jsonb tags = %v, want a refusal naming text[] and no predicate", err)
	}
}

// newRoutedPool is a pool on a migrated database with an event store's
// log (position, status, tags) of 705 events, those of 1 to 700 tagged
// for both twoRoutes (10 and 20 status NEW, the others SENT), 701 to 705
// for none (703 NEW), and its old poller's progress per topic:
// wallet-events at 600, payment-events at 550 (another publisher's
// elsewhere).
func newRoutedPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool := newTestPool(t)
	for _, sql := range []string{
		`CREATE TABLE events (position bigint PRIMARY KEY, status text NOT NULL, tags text[])`,
		`INSERT INTO events SELECT i, CASE WHEN i IN (10, 20, 703) THEN 'NEW' ELSE 'SENT' END,
			CASE WHEN i <= 700 THEN '{wallet_id=w,payment_id=p}'::text[] ELSE '{other}' END FROM generate_series(1, 705) AS i`,
		`CREATE TABLE outbox_topic_progress (topic text, publisher text, last_position bigint, updated_at timestamptz DEFAULT now(), PRIMARY KEY (topic, publisher))`,
		`INSERT INTO outbox_topic_progress VALUES ('wallet-events', 'KafkaPublisher', 600), ('payment-events', 'KafkaPublisher', 550),
			('wallet-events', 'OtherPublisher', 100), ('payment-events', 'OtherPublisher', 700)`,
	} {
		if _, err := pool.Exec(context.Background(), sql); err != nil {
			t.Fatal(err)
		}
	}
	return pool
}

// adoptedPerTopic lists the adopted rows of public.events per topic, in
// the topics' order, as "topic: 10 20 601-700" (runs of positions), after
// checking that no topic has one twice.
func adoptedPerTopic(ctx context.Context, t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, _ := pool.Query(ctx, `SELECT topic, array_agg(event_id::bigint ORDER BY event_id::bigint) FROM outbox_delivery
		WHERE reload AND source_table = 'public.events' GROUP BY topic ORDER BY topic`)
	return collectRuns(t, rows)
}

// collectRuns reads rows of a label and ids in order as "label: 10 20
// 601-700" (runs of ids), after checking that no label has one twice.
func collectRuns(t *testing.T, rows pgx.Rows) []string {
	t.Helper()
	var got []string
	var topic string
	var ids []int64
	_, err := pgx.ForEachRow(rows, []any{&topic, &ids}, func() error {
		var runs []string
		for i := 0; i < len(ids); {
			j := i
			for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
				j++
			}
			if j+1 < len(ids) && ids[j+1] == ids[j] {
				t.Errorf("%s: position %d adopted twice", topic, ids[j])
			}
			run := strconv.FormatInt(ids[i], 10)
			if j > i {
				run += "-" + strconv.FormatInt(ids[j], 10)
			}
			runs = append(runs, run)
			i = j + 1
		}
		got = append(got, topic+": "+strings.Join(runs, " "))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}
