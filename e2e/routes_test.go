package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRoutesNamingOneTopic: with the event store's routes and a third
// route to wallet-events, an event that matches all three is sent once to
// wallet-events and once to payment-events, in either delivery mode (both
// take the decoder's routes); `run` warns of the two routes at start.
func TestRoutesNamingOneTopic(t *testing.T) {
	parallel(t)
	for _, mode := range []struct {
		name string
		args []string
	}{
		{"at-least-once", nil},
		// The example orders by topic, which exactly-once delivery does
		// not build yet: by key there.
		{"exactly-once", append([]string{"--ordering", "key"}, exactlyOnce...)},
	} {
		t.Run(mode.name, func(t *testing.T) {
			e := newEnv(t)
			example, err := os.ReadFile(examplePath("event-store-tags"))
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "relay.yaml")
			third := "      - {topic: wallet-events, any_of_tags: [transfer_id]}\n"
			yaml := strings.Replace(string(example), "    # no write_back", third+"    # no write_back", 1)
			// Topics of this test's own, on a broker the suite shares.
			wallet, payment := e.topic("wallet-events"), e.topic("payment-events")
			yaml = strings.NewReplacer("wallet-events", wallet, "payment-events", payment).Replace(yaml)
			if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			e.exampleSchema("event-store-tags")
			e.migrateConfig(path)
			p := e.startRelayArgs(relayBin, append(e.configArgs(path), mode.args...)...)
			if want := "is routes[0]'s too: an event that matches both is sent to it once"; !strings.Contains(p.Log(), want) {
				t.Errorf("run did not warn %q", want)
			}

			const n = 50
			mustExec(t, e.conn, `INSERT INTO events (type, tags, data, transaction_id)
				SELECT 'MoneyTransferred', ARRAY['wallet_id=w' || i, 'transfer_id=t' || i], '{}', pg_current_xact_id()
				FROM generate_series(1, $1) i`, n)
			end := e.lsn(currentLSN)
			e.waitFor("every copy acked and confirmed", 60*time.Second, func() bool { return e.lsn(slotLSN) >= end })
			if got := p.status().EventsProduced; got != 2*n {
				t.Errorf("%d copies produced for %d events, want %d: one per topic", got, n, 2*n)
			}
			p.stop(30 * time.Second)
			for _, topic := range []string{wallet, payment} {
				ids := map[string]int{}
				cl := e.fromStart(topic, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
				e.waitFor(topic+" has every event", 30*time.Second, func() bool {
					fetchesOf(cl).EachRecord(func(r *kgo.Record) { ids[header(r, "id")]++ })
					return len(ids) == n
				})
				cl.Close()
				for id, c := range ids {
					if c != 1 {
						t.Errorf("%s: event %s %d times, want once", topic, id, c)
					}
				}
			}
		})
	}
}

// fetchesOf polls cl once, for at most a second.
func fetchesOf(cl *kgo.Client) kgo.Fetches {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return cl.PollFetches(ctx)
}
