package slot

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/outbox"
)

// eventStoreSQL is an event store's log of 20 events, 1 to 10 tagged for
// wallet-events, 11 to 20 for wallet-events and payment-events, and its
// old publishers' progress: wallet-events at 15 for Kafka, at 12 for the
// webhook; payment-events at 5 for Kafka.
const eventStoreSQL = `CREATE TABLE events (position bigint PRIMARY KEY, data json NOT NULL DEFAULT '{}', tags text[]);
	INSERT INTO events (position, tags) SELECT i, CASE WHEN i <= 10 THEN '{wallet_id=w}' ELSE '{wallet_id=w,payment_id=p}' END::text[]
		FROM generate_series(1, 20) AS i;
	CREATE TABLE outbox_topic_progress (topic text, publisher text, last_position bigint);
	INSERT INTO outbox_topic_progress VALUES ('wallet-events', 'KafkaPublisher', 15), ('wallet-events', 'WebhookPublisher', 12),
		('payment-events', 'KafkaPublisher', 5)`

// progressOf is the event store's predicate for a topic and an old
// publisher: the events after its last position.
func progressOf(topic, publisher string) string {
	return "position > (SELECT last_position FROM outbox_topic_progress WHERE topic = '" + topic + "' AND publisher = '" + publisher + "')"
}

// walletToPartner is the event store routed to wallet-events, for Kafka
// and the partner webhook, with the wallet route's adopt given per
// publisher (wallet, nil: one for all, walletAll), and to payment-events,
// for Kafka alone, after Kafka's position.
func walletToPartner(wallet map[string]string, walletAll string) outbox.Table {
	return outbox.Table{Mapping: decoder.Mapping{Schema: "public", Table: "events", IDColumn: "position", PayloadColumn: "data", TagsColumn: "tags",
		Routes: []decoder.Route{{Topic: "wallet-events", RequiredTags: []string{"wallet_id"}}, {Topic: "payment-events", RequiredTags: []string{"payment_id"}}}},
		RoutePublishers: [][]string{{"kafka", "partner"}, nil},
		RouteAdopt:      []string{walletAll, progressOf("payment-events", "KafkaPublisher")},
		RouteAdoptBy:    []map[string]string{wallet, nil}}
}

// TestAdoptBacklogPerPublisher: a slot created for a table whose wallet
// route goes to Kafka and a webhook publisher adopts the backlog once per
// publisher, in the status rows of each, each by its own predicate (the
// webhook's from its own position), or by the one predicate given for
// both; false adopts nothing for its publisher; the payment route's, for
// Kafka alone, only for Kafka. CheckAdopt counts the same rows first.
func TestAdoptBacklogPerPublisher(t *testing.T) {
	t.Parallel()
	own := map[string]string{"kafka": progressOf("wallet-events", "KafkaPublisher"), "partner": progressOf("wallet-events", "WebhookPublisher")}
	for _, tc := range []struct {
		name  string
		table outbox.Table
		want  []string // "publisher topic: first-last" of the adopted rows
	}{
		{"each publisher's own", walletToPartner(own, ""),
			[]string{"kafka payment-events: 11-20", "kafka wallet-events: 16-20", "partner wallet-events: 13-20"}},
		{"one for both", walletToPartner(nil, progressOf("wallet-events", "KafkaPublisher")),
			[]string{"kafka payment-events: 11-20", "kafka wallet-events: 16-20", "partner wallet-events: 16-20"}},
		{"false for the partner", walletToPartner(map[string]string{"kafka": own["kafka"], "partner": "false"}, ""),
			[]string{"kafka payment-events: 11-20", "kafka wallet-events: 16-20"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := sharedPG.DB(t)
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, db.URL())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			cfg := defaultConfig()
			cfg.PostgresURL, cfg.Slot = db.URL(), db.Name
			if _, err := migrations.Apply(ctx, conn, migrationsOf(cfg)); err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Exec(ctx, eventStoreSQL); err != nil {
				t.Fatal(err)
			}
			cfg.Tables = []outbox.Table{tc.table}
			counted, err := CheckAdopt(ctx, conn, cfg)
			if err != nil {
				t.Fatalf("CheckAdopt: %v", err)
			}
			res, err := Prepare(ctx, conn, cfg)
			if err != nil {
				t.Fatalf("Prepare: %v", err)
			}
			got := adoptedRuns(ctx, t, conn)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("adopted\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if n := adoptedCount(tc.want); res.Adopted != n || counted != n {
				t.Errorf("Prepare adopted %d, CheckAdopt counted %d; want %d", res.Adopted, counted, n)
			}
		})
	}
}

// adoptedRuns lists the status table's adopted rows as "publisher
// topic: first-last", after checking each (publisher, topic) has one run
// of positions, each once.
func adoptedRuns(ctx context.Context, t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	rows, _ := conn.Query(ctx, `SELECT publisher || ' ' || topic, min(event_id::bigint), max(event_id::bigint), count(*), count(DISTINCT event_id)
		FROM outbox_delivery WHERE reload AND source_table = 'public.events' GROUP BY publisher, topic ORDER BY publisher, topic`)
	var got []string
	var (
		label                 string
		first, last, n, uniqs int64
	)
	_, err := pgx.ForEachRow(rows, []any{&label, &first, &last, &n, &uniqs}, func() error {
		if n != last-first+1 || uniqs != n {
			t.Errorf("%s: %d rows, %d distinct, for %d-%d", label, n, uniqs, first, last)
		}
		got = append(got, label+": "+strconv.FormatInt(first, 10)+"-"+strconv.FormatInt(last, 10))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// adoptedCount is how many rows runs ("… first-last") hold.
func adoptedCount(runs []string) int64 {
	var n int64
	for _, r := range runs {
		_, span, _ := strings.Cut(r, ": ")
		a, b, _ := strings.Cut(span, "-")
		first, _ := strconv.ParseInt(a, 10, 64)
		last, _ := strconv.ParseInt(b, 10, 64)
		n += last - first + 1
	}
	return n
}

// TestCheckAdoptNamesThePublisher: a publisher's own predicate that
// selects no row and is NULL on the newest row (a misspelt publisher in
// its subquery) is refused naming the route and the publisher, or the
// table's adopt and the publisher; one false there (the publisher caught
// up, or a literal false) is accepted; a table whose mapping leaves out a
// publisher its events go to is refused before any predicate runs.
func TestCheckAdoptNamesThePublisher(t *testing.T) {
	t.Parallel()
	db := sharedPG.DB(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, eventStoreSQL); err != nil {
		t.Fatal(err)
	}
	kafka := progressOf("wallet-events", "KafkaPublisher")
	unrouted := func(by map[string]string) outbox.Table {
		return outbox.Table{Mapping: decoder.Mapping{Schema: "public", Table: "events", IDColumn: "position", PayloadColumn: "data", TopicTemplate: "events"},
			Publishers: []string{"kafka", "partner"}, AdoptBy: by}
	}
	for _, tc := range []struct {
		name  string
		table outbox.Table
		want  int64
		err   string // the refusal's start; "" for none
	}{
		{"a misspelt publisher", walletToPartner(map[string]string{"kafka": kafka, "partner": progressOf("wallet-events", "WebhookPublishr")}, ""), 0,
			"adopt the rows of public.events: routes[0].adopt.partner (topic wallet-events) selects no row that the route sends to wallet-events for publisher partner, " +
				"and is NULL on the table's newest row"},
		{"the partner caught up", walletToPartner(map[string]string{"kafka": kafka, "partner": "position > 20"}, ""), 5 + 10, ""},
		{"false for the partner", walletToPartner(map[string]string{"kafka": kafka, "partner": "false"}, ""), 5 + 10, ""},
		{"the table's, false for Kafka", unrouted(map[string]string{"kafka": "false", "partner": "position > 12"}), 8, ""},
		{"the table's, NULL for the partner", unrouted(map[string]string{"kafka": "position > 12", "partner": "position > NULL::bigint"}), 0,
			"adopt the rows of public.events: adopt.partner selects no row for publisher partner, and is NULL on the table's newest row (position > NULL::bigint)"},
		{"the table's one for both, selecting none", unrouted(nil), 0, "adopt the rows of public.events: the predicate selects no row (position > 100)"},
		{"a publisher left out", walletToPartner(map[string]string{"kafka": kafka}, ""), 0,
			`table public.events: routes[0].adopt names no predicate for publisher "partner"`},
	} {
		cfg := defaultConfig()
		if tc.name == "the table's one for both, selecting none" {
			tc.table.Adopt = "position > 100"
		}
		cfg.Tables = []outbox.Table{tc.table}
		n, err := CheckAdopt(ctx, conn, cfg)
		var nothing *NothingToAdoptError
		switch {
		case tc.err == "" && (err != nil || n != tc.want):
			t.Errorf("%s: CheckAdopt = %d, %v; want %d", tc.name, n, err, tc.want)
		case tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err)):
			t.Errorf("%s: CheckAdopt = %d, %v; want %q…", tc.name, n, err, tc.err)
		case strings.Contains(tc.name, "NULL") || strings.Contains(tc.name, "misspelt"):
			if !errors.As(err, &nothing) || nothing.Publisher != "partner" {
				t.Errorf("%s: %#v, want a *NothingToAdoptError of the partner", tc.name, err)
			}
		}
	}
}
