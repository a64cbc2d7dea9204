package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestPublicationRenamedAndBack: a publication renamed and renamed back
// (or dropped and created again) while the relay runs is missing from the
// WAL written in between, which pgoutput reads it as of: the slot can
// never decode past it. The relay must stop, not reconnect for ever,
// saying so with the command that resumes; that command (or the commands
// it prints in turn), then a start, deliver every event. (Before the fix
// the relay's advice, recover --since and a start, led into a loop of
// `publication "cdc_relay" does not exist`.) On PostgreSQL 18, which skips
// the missing publication, the table watch's command suffices.
func TestPublicationRenamedAndBack(t *testing.T) {
	parallel(t)
	for _, tc := range []struct{ name, away, back string }{
		{"renamed and back", "ALTER PUBLICATION cdc_relay RENAME TO cdc_relay_tmp", "ALTER PUBLICATION cdc_relay_tmp RENAME TO cdc_relay"},
		// As migrate creates it.
		{"dropped and created again", "DROP PUBLICATION cdc_relay",
			"CREATE PUBLICATION cdc_relay FOR TABLE outbox WITH (publish = 'insert', publish_via_partition_root = true)"},
	} {
		t.Run(tc.name, func(t *testing.T) { publicationAwayAndBack(t, tc.away, tc.back) })
	}
}

// publicationAwayAndBack runs TestPublicationRenamedAndBack with away and
// back, the statements that take the publication away and bring it back.
func publicationAwayAndBack(t *testing.T, away, back string) {
	e := newEnv(t)
	relay := e.startRelay()
	topic := e.topic("order")
	for i := range 2 {
		insert(t, e.conn, "order", "k", "Before", fmt.Sprintf(`{"n": "before %d"}`, i))
	}
	e.readN(topic, 2, 30*time.Second)

	mustExec(t, e.conn, away)
	for i := range 3 {
		insert(t, e.conn, "order", "k", "Between", fmt.Sprintf(`{"n": "between %d"}`, i))
	}
	mustExec(t, e.conn, back)
	for i := range 2 {
		insert(t, e.conn, "order", "k", "After", fmt.Sprintf(`{"n": "after %d"}`, i))
	}
	e.waitFor("the relay stops", 60*time.Second, func() bool { return !relay.Running() })
	if relay.Err() == nil {
		t.Fatalf("the relay exited 0; want an error")
	}
	log, recreated := relay.Log(), false
	for round := 0; ; round++ {
		if round == 3 {
			t.Fatalf("the relay still stops after %d rounds of its printed commands:\n%s", round, log)
		}
		recreated = e.recoverAsPrinted(log) || recreated
		relay = e.spawnRelay()
		// recover published the rows of the outbox table already: a row
		// inserted now shows whether the relay streams.
		insert(t, e.conn, "order", "k", "Later", fmt.Sprintf(`{"n": "later %d"}`, round))
		e.waitFor("the relay delivers every event, or stops", 60*time.Second, func() bool {
			return !relay.Running() || e.everyIDIn(topic)
		})
		if relay.Running() {
			break
		}
		log = relay.Log()
		if strings.Contains(log, "does not exist") && !strings.Contains(log, "--recreate-slot") {
			t.Fatalf("the relay stopped at the missing publication without saying to create the slot again:\n%s", log)
		}
	}
	relay.stop(30 * time.Second)
	// PostgreSQL 18's pgoutput skips a publication missing as of the WAL
	// it decodes, with a warning: the table watch's recover --since then
	// suffices. Before 18 the slot cannot get past it.
	if !recreated && clusterVersion(t) < 180000 {
		t.Errorf("no printed command created the slot again")
	}
}

// recoverAsPrinted runs the `cdc-relay recover …` command that a relay's
// log printed last (with --recreate-slot and --since as printed), with the
// relay's flags; it reports whether the command had --recreate-slot.
func (e *env) recoverAsPrinted(log string) bool {
	e.t.Helper()
	all := regexp.MustCompile("`cdc-relay recover((?: --recreate-slot)?(?: --since \\S+)?)`").FindAllStringSubmatch(log, -1)
	if all == nil {
		e.t.Fatalf("the relay's error has no recover command:\n%s", log)
	}
	printed := strings.Fields(all[len(all)-1][1])
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "cdc-relay recover") {
			e.t.Logf("the relay said: %s", line)
		}
	}
	e.runRecover(printed...)
	return len(printed) > 0 && printed[0] == "--recreate-slot"
}

// everyIDIn reports whether the id of each of the outbox table's rows
// arrived in topic, as the "id" header of a record.
func (e *env) everyIDIn(topic string) bool {
	ids := e.outboxIDs("true")
	got := map[string]bool{}
	for _, r := range e.readAll(topic) {
		got[header(r, "id")] = true
	}
	for _, id := range ids {
		if !got[id] {
			return false
		}
	}
	return true
}
