package e2e

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/replication"
)

// TestOnSlotLossRecover: the relay is SIGKILLed, events are committed,
// and its slot is dropped (in one case, created again under the same name,
// so that it is ahead of the relay's checkpoint), as after a failover to
// a standby without the slot. Started with --on-slot-loss recover, the
// relay repairs the gap by itself: it keeps running, logs the window and
// the count, every event arrives (some twice), events committed afterwards
// arrive, and the metrics count one recovery. A relay standing by when the
// slot is dropped does the same once it takes the leadership.
func TestOnSlotLossRecover(t *testing.T) {
	parallel(t)
	for _, tc := range []struct {
		name     string
		recreate bool
		standby  bool
	}{
		{name: "dropped"},
		{name: "ahead", recreate: true},
		{name: "standby takes over", standby: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			relay := e.startRelay()
			topic := e.topic("order")
			insert(t, e.conn, "order", "k", "One", `{"n": 1}`)
			e.readN(topic, 1, 30*time.Second)
			relay.Kill()
			insert(t, e.conn, "order", "k", "Unread", `{"n": "unread"}`)
			e.waitFor("the killed relay's walsender exits", 30*time.Second, func() bool { return !e.slotActive() })
			var leader *pgx.Conn // holds the leadership lock, as another relay would
			if tc.standby {
				leader = mustConnect(t, e.url)
				mustExec(t, leader, "SET application_name = 'cdc-relay leader'") // as a relay names its lock's session
				mustExec(t, leader, "SELECT pg_advisory_lock(hashtextextended('cdc-relay/' || $1::text, 0))", e.slot)
				relay = e.spawnRelay("--on-slot-loss", "recover")
				e.waitFor("the relay stands by", 30*time.Second, func() bool { return strings.Contains(relay.Log(), "standing by") })
			}
			mustExec(t, e.conn, "SELECT pg_drop_replication_slot($1)", e.slot)
			insert(t, e.conn, "order", "k", "Lost", `{"n": "lost"}`)
			if tc.recreate {
				mustExec(t, e.conn, "SELECT pg_create_logical_replication_slot($1, 'pgoutput')", e.slot)
				insert(t, e.conn, "order", "k", "InTheNewSlot", `{"n": "in the new slot"}`)
			}

			if tc.standby {
				leader.Close(context.Background()) // the leader is gone
				e.waitFor("the standby streams the slot", 60*time.Second, func() bool {
					if !relay.Running() {
						t.Fatalf("the relay exited: %v\n%s", relay.Err(), relay.Log())
					}
					return strings.Contains(relay.Log(), "replication started") && e.slotActive()
				})
			} else {
				relay = e.startRelay("--on-slot-loss", "recover")
			}
			insert(t, e.conn, "order", "k", "After", `{"n": "after"}`)
			want := []string{`{"n": 1}`, `{"n": "unread"}`, `{"n": "lost"}`, `{"n": "after"}`}
			if tc.recreate {
				want = append(want, `{"n": "in the new slot"}`)
			}
			e.waitFor("every event arrives", 60*time.Second, func() bool { return hasValues(e.readAll(topic), want) })

			log := relay.Log()
			repaired := regexp.MustCompile(`level=WARN msg="repaired the gap in the WAL[^"]*" slot=\S+ since=\S+ gap_from=\S+ gap_to=\S+ rows=(\d+) published=(\d+) parked=0`).
				FindStringSubmatch(log)
			if repaired == nil {
				t.Fatalf("the relay does not log the window and the count:\n%s", log)
			}
			t.Log(repaired[0])
			rows := len(want) - 1 // all but "after", written since the checkpoint less the margin
			if repaired[1] != repaired[2] || repaired[2] != strconv.Itoa(rows) {
				t.Errorf("the relay says rows=%s published=%s, want %d of each", repaired[1], repaired[2], rows)
			}
			_, families := relay.scrape()
			if got := value(families, "cdc_relay_slot_recoveries_total"); got != 1 {
				t.Errorf("cdc_relay_slot_recoveries_total = %v, want 1", got)
			}
			if got := value(families, "cdc_relay_slot_recovery_rows_total", "result", "published"); got != float64(rows) {
				t.Errorf("cdc_relay_slot_recovery_rows_total{result=published} = %v, want %d", got, rows)
			}
			if st := relay.status(); st.SlotRecoveries != 1 || st.OnSlotLoss != "recover" {
				t.Errorf("GET /status: slot_recoveries %d, on_slot_loss %q; want 1, recover", st.SlotRecoveries, st.OnSlotLoss)
			}
			if !relay.Running() {
				t.Fatalf("the relay exited: %v", relay.Err())
			}
			e.checkFailoverSlot(relay)
			relay.stop(30 * time.Second)
			if strings.Count(log, "repaired the gap in the WAL") != 1 || strings.Contains(log, "repair the gap in the WAL of") {
				t.Errorf("the relay did not repair the gap once, at its first try:\n%s", log)
			}
		})
	}
}

// hasValues reports whether recs hold every value of want (and perhaps
// others, or some twice).
func hasValues(recs []*kgo.Record, want []string) bool {
	var got []string
	for _, r := range recs {
		got = append(got, string(r.Value))
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			return false
		}
	}
	return true
}

// checkFailoverSlot requires, on PostgreSQL 17+, that the slot the relay
// streams is a failover slot (whoever created it) and that the relay
// warned once that synchronized_standby_slots is not set; before 17, that
// the relay said failover slots do not exist.
func (e *env) checkFailoverSlot(p *relayProc) {
	e.t.Helper()
	f, err := replication.LookupFailover(context.Background(), e.conn, e.slot)
	if err != nil {
		e.t.Fatal(err)
	}
	log := p.Log()
	switch {
	case !f.Supported() && !strings.Contains(log, "has no failover slots"):
		e.t.Errorf("PostgreSQL %d: the relay does not say that it has no failover slots:\n%s", f.Version, log)
	case !f.Supported():
	case !f.Slot:
		e.t.Errorf("PostgreSQL %d: the slot the relay streams is not a failover slot", f.Version)
	case strings.Count(log, "synchronized_standby_slots is not set") != 1:
		e.t.Errorf("the relay does not warn once that synchronized_standby_slots is not set:\n%s", log)
	}
}
