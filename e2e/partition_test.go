package e2e

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/internal/tcpproxy"
)

// TestSilentPartitionReconnects puts a proxy between the relay and
// PostgreSQL, then makes it stop forwarding on every open connection
// without closing any: a hung proxy, or a partition that drops packets.
// No error reaches either end. The relay must notice the silence within
// --replication-timeout, reconnect (new connections get through), and
// deliver the events committed meanwhile, in order. Its server processes
// behind the silent connections live on: the walsender keeps the slot
// active and a backend keeps the leadership lock, so the relay must end
// them to go on.
func TestSilentPartitionReconnects(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	cfg, err := pgconn.ParseConfig(e.url)
	if err != nil {
		t.Fatal(err)
	}
	server := net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
	proxy, err := tcpproxy.Start(server)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	proxied := strings.Replace(e.url, server, proxy.Addr(), 1)

	const timeout = 5 * time.Second
	relay := e.startRelay("--postgres-url", proxied, "--replication-timeout", timeout.String()) // the last --postgres-url wins
	topic := e.topic("order")
	insert(t, e.conn, "order", "k", "Before", `{"n": 0}`)
	e.readN(topic, 1, 30*time.Second)

	silenced := proxy.Silence()
	at := time.Now()
	want := []string{`{"n": 0}`}
	for i := 1; i <= 10; i++ {
		insert(t, e.conn, "order", "k", "During", fmt.Sprintf(`{"n": %d}`, i)) // straight into PostgreSQL
		want = append(want, fmt.Sprintf(`{"n": %d}`, i))
	}
	// The timeout, then ending the server processes left behind,
	// reconnecting (1 s backoff) and resuming: some seconds more on a
	// quiet machine, logged; the deadline only tells a stall.
	// Events whose confirmation the silence swallowed may come twice.
	var recs []*kgo.Record
	e.waitFor("every event committed during the silence arrives", timeout+55*time.Second, func() bool { // generous: how soon is logged
		recs = e.readAll(topic)
		return len(firstSeen(recs)) == len(want)
	})
	took := time.Since(at)
	if got := firstSeen(recs); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("events in this order: %s\nwant: %s", got, want)
	}
	if !strings.Contains(relay.Log(), "no message from PostgreSQL for 5s") {
		t.Errorf("no log line says why the relay reconnected")
	}
	t.Logf("%d connections went silent; the events committed meanwhile arrived %s later (%d sent twice)",
		silenced, took.Round(100*time.Millisecond), len(recs)-len(want))
	relay.stop(30 * time.Second)
}

// firstSeen returns the values of recs in order, each at its first
// appearance only.
func firstSeen(recs []*kgo.Record) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range recs {
		if v := string(r.Value); !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}
