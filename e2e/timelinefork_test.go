package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"

	"github.com/cdc-relay/cdc-relay/internal/pgtemp"
)

// TestExactlyOnceFailoverToAStandbyBehindKafka: with a failover slot and
// an asynchronous standby (synchronized_standby_slots not set), the old
// primary sends the relay a transaction the standby never receives, and
// the relay commits it to Kafka with its position T. The promoted standby
// keeps the synced slot and the checkpoint row, so the same stream, but
// its new timeline reuses the positions after its switch point. The relay
// must not take T: it resumes from the slot, says why, and sends every
// event committed on the new primary, exactly once, whether it starts
// before the new WAL passes T or after; a record written on the new
// timeline is taken on the next start as usual.
func TestExactlyOnceFailoverToAStandbyBehindKafka(t *testing.T) {
	parallel(t)
	f := newPrimaryFailover(t, pgtemp.StandbyOptions{SlotSync: true})
	if v := f.serverVersion(); v < 170000 {
		t.Skipf("needs failover slots, PostgreSQL 17+ (this is %d): before 17, a promoted standby has no slot", v)
	}
	oldEnd := f.commitWhatTheStandbyMisses()
	f.promoteStandby()

	insertEvents(t, f, "After", 5)
	if at := f.lsn(insertLSN); at >= oldEnd {
		t.Fatalf("the new primary's WAL (%s) is already past the old primary's end (%s): the test needs a larger phantom transaction", at, oldEnd)
	}
	relay := f.startRelay(exactlyOnce...)
	f.waitConfirmed(60 * time.Second)
	f.waitFor("the relay warns that it did not take the topic's position", 30*time.Second, func() bool {
		return strings.Contains(relay.Log(), "where this server's timeline 2 left it")
	})

	f.padWALPast(oldEnd.String())
	insertEvents(t, f, "Later", 5)
	f.waitConfirmed(60 * time.Second)
	if !relay.Running() {
		t.Fatalf("the relay exited: %v\n%s", relay.Err(), relay.Log())
	}
	relay.stop(30 * time.Second)

	// The records now carry timeline 2: the next start takes them.
	insertEvents(t, f, "Last", 1)
	relay = f.startRelay(exactlyOnce...)
	f.waitConfirmed(60 * time.Second)
	if log := relay.Log(); strings.Contains(log, "left it") || !strings.Contains(log, "last committed position read") {
		t.Errorf("a restart on the new timeline must take its own position, without a warning:\n%s",
			grepLines(log, "left it", "last committed", "resuming"))
	}
	requireOnceEach(t, f, f.outboxIDs("event_type IN ('After', 'Later', 'Last')"))
}

// commitWhatTheStandbyMisses makes the standby asynchronous and the
// primary send logical changes without waiting for it (what the relay only
// warns about), cuts the standby off, and has the relay commit to Kafka a
// large transaction the standby never receives. It returns that
// transaction's end on the old primary's timeline; the relay is stopped.
func (f *primaryFailover) commitWhatTheStandbyMisses() pglogrepl.LSN {
	t, ctx := f.t, context.Background()
	t.Helper()
	mustExec(t, f.conn, "ALTER SYSTEM SET synchronized_standby_slots = ''")
	mustExec(t, f.conn, "ALTER SYSTEM SET synchronous_standby_names = ''")
	mustExec(t, f.conn, "SELECT pg_reload_conf()")
	relay := f.startRelay(exactlyOnce...)
	insertEvents(t, f, "Before", 5)
	f.waitConfirmed(60 * time.Second)
	f.waitSlotSynced()

	sc := mustConnect(t, f.standby.URL("postgres"))
	mustExec(t, sc, "ALTER SYSTEM SET primary_conninfo = ''")
	mustExec(t, sc, "SELECT pg_reload_conf()")
	sc.Close(ctx)
	f.waitFor("the standby is cut off", 30*time.Second, func() bool {
		var n int
		err := f.conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_replication WHERE application_name = 'standby'").Scan(&n)
		return err == nil && n == 0
	})
	mustExec(t, f.conn, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
		SELECT 'order', 'k', 'Phantom', jsonb_build_object('n', g, 'pad', repeat('x', 500)) FROM generate_series(1, 2000) g`)
	end := f.lsn(insertLSN)
	f.waitFor("the relay confirms the transaction the standby misses", 60*time.Second, func() bool { return f.lsn(slotLSN) >= end })
	relay.Kill()
	return end
}

// promoteStandby stops the old primary at once and promotes the standby,
// and leaves f.conn connected to it.
func (f *primaryFailover) promoteStandby() {
	t, ctx := f.t, context.Background()
	t.Helper()
	hctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := f.primary.Halt(hctx, "immediate"); err != nil {
		t.Fatal(err)
	}
	if err := f.standby.Promote(hctx); err != nil {
		t.Fatal(err)
	}
	f.conn.Close(ctx)
	f.conn = mustConnect(t, f.url)
}

// insertEvents commits n events of type typ, one transaction each.
func insertEvents(t *testing.T, f *primaryFailover, typ string, n int) {
	t.Helper()
	for i := range n {
		insert(t, f.conn, "order", "k", typ, fmt.Sprintf(`{"n": %d}`, i))
	}
}

// requireOnceEach requires each of want in the topic exactly once, as a
// read_committed consumer sees it. Events the old primary alone had are
// in Kafka too: not in want, and not counted.
func requireOnceEach(t *testing.T, f *primaryFailover, want []string) {
	t.Helper()
	counts := f.countCommitted(f.topic, 0, 30*time.Second)
	var wrong []string
	for _, id := range want {
		if counts[id] != 1 {
			wrong = append(wrong, fmt.Sprintf("%s: %d", id, counts[id]))
		}
	}
	if len(wrong) > 0 {
		t.Fatalf("%d of %d events committed on the new primary are not in Kafka exactly once: %v", len(wrong), len(want), wrong)
	}
}
