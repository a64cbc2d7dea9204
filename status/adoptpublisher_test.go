package status

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// progressFor is an event store's predicate for a topic and one of its
// publishers: the events after that publisher's last position.
func progressFor(topic, publisher string) string {
	return "position > (SELECT last_position FROM outbox_topic_progress WHERE topic = '" + topic + "' AND publisher = '" + publisher + "')"
}

// TestAdoptForPublishers: a table adopted for two publishers, each
// through its own store with its own predicates, gets status rows of each
// publisher, each selecting its own rows (KafkaPublisher's progress at
// 600 and 550, OtherPublisher's at 100 and 700); a predicate shared by
// both selects the same rows for each; a pending row is adopted for each;
// a store refuses an Adoptable of another publisher.
func TestAdoptForPublishers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newRoutedPool(t)
	base := Adoptable{Schema: "public", Name: "events", Source: "public.events", IDColumn: "position", TagsColumn: "tags", Routes: twoRoutes}
	own := func(publisher, progress string) Adoptable {
		a := base
		a.Publisher, a.OwnRouteWhere = publisher, []bool{true, true}
		a.RouteWhere = []string{progressFor("wallet-events", progress), progressFor("payment-events", progress)}
		return a
	}
	shared := func(publisher string) Adoptable {
		a := base
		a.Publisher, a.Where, a.StatusColumn, a.Pending = publisher, "position > 695", "status", []string{"NEW"}
		return a
	}
	for _, tc := range []struct {
		name       string
		kafka, web Adoptable
		want       []string // per publisher and topic: "publisher topic: positions"
	}{
		{"each publisher's own predicates", own(KafkaPublisher, "KafkaPublisher"), own("partner", "OtherPublisher"), []string{
			"kafka payment-events: 551-700", "kafka wallet-events: 601-700",
			"partner wallet-events: 101-700"}}, // payment-events at 700: caught up
		{"one predicate for both, and pending rows", shared(KafkaPublisher), shared("partner"), []string{
			"kafka payment-events: 10 20 696-700", "kafka wallet-events: 10 20 696-700",
			"partner payment-events: 10 20 696-700", "partner wallet-events: 10 20 696-700"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := pool.Exec(ctx, "TRUNCATE outbox_delivery"); err != nil {
				t.Fatal(err)
			}
			err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				for _, a := range []Adoptable{tc.kafka, tc.web} {
					store := NewStore(pool, "public", "outbox_delivery", Publisher(a.Publisher))
					would, werr := store.WouldAdopt(ctx, tx, a)
					n, err := store.Adopt(ctx, tx, a)
					if err != nil || n == 0 || werr != nil || would != n {
						t.Errorf("Adopt for %s = %d, %v; WouldAdopt before it %d, %v: want the same count", a.Publisher, n, err, would, werr)
					}
					// What it holds now is not adopted again.
					if again, err := store.WouldAdopt(ctx, tx, a); err != nil || again != 0 {
						t.Errorf("WouldAdopt for %s after Adopt = %d, %v; want 0", a.Publisher, again, err)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := adoptedPerPublisher(ctx, t, pool); strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("adopted\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
	if _, err := NewStore(pool, "public", "outbox_delivery").Adopt(ctx, pool, shared("partner")); err == nil ||
		!strings.Contains(err.Error(), `for publisher partner through the status store of publisher kafka: make the store with status.Publisher("partner")`) {
		t.Errorf("Kafka's store adopting the partner's rows: %v, want a refusal", err)
	}
}

// adoptedPerPublisher lists the adopted rows of public.events per
// publisher and topic, as "kafka wallet-events: 10 20 601-700" (runs of
// positions), after checking that no publisher has one twice in a topic.
func adoptedPerPublisher(ctx context.Context, t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, _ := pool.Query(ctx, `SELECT publisher || ' ' || topic, array_agg(event_id::bigint ORDER BY event_id::bigint) FROM outbox_delivery
		WHERE reload AND source_table = 'public.events' GROUP BY publisher, topic ORDER BY publisher, topic`)
	return collectRuns(t, rows)
}

// TestCheckAdoptNamesThePublishersPredicate: a publisher's own predicate
// is named with its publisher and its route's index among the table's
// routes (RouteIndex), as the config file writes it, in Predicates and in
// PostgreSQL's refusal; one shared by every publisher without it.
func TestCheckAdoptNamesThePublishersPredicate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newRoutedPool(t)
	a := Adoptable{Schema: "public", Name: "events", Source: "public.events", IDColumn: "position", TagsColumn: "tags", Routes: twoRoutes,
		Publisher: "partner", RouteIndex: []int{0, 2}, Where: "position > 1", OwnWhere: true,
		RouteWhere: []string{"position > 2", "postion > 3"}, OwnRouteWhere: []bool{false, true}}
	var names []string
	for _, p := range a.Predicates() {
		names = append(names, p.Name())
	}
	// The table's is used by no route: each has its own.
	if want := "routes[0].adopt (topic wallet-events)|routes[2].adopt.partner (topic payment-events)"; strings.Join(names, "|") != want {
		t.Errorf("predicates %q, want %s", names, want)
	}
	err := CheckAdopt(ctx, pool, a)
	if want := `adopt the rows of public.events: routes[2].adopt.partner (topic payment-events): ERROR: column "postion" does not exist`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("CheckAdopt = %v, want %q…", err, want)
	}
	a.Routes, a.TagsColumn, a.RouteWhere, a.OwnRouteWhere, a.RouteIndex, a.Where = nil, "", nil, nil, nil, "postion > 1"
	if err := CheckAdopt(ctx, pool, a); err == nil || !strings.HasPrefix(err.Error(), `adopt the rows of public.events: adopt.partner: ERROR: column "postion"`) {
		t.Errorf("CheckAdopt = %v, want the partner's adopt named", err)
	}
}
