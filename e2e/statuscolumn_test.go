package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/config"
	"github.com/cdc-relay/cdc-relay/outbox"
	"github.com/cdc-relay/cdc-relay/writeback"
)

// The outbox row's own status column tells the truth, as the teams'
// runbooks and alerts read it, on four layouts of examples/, each relayed
// by its own schema.sql and relay.yaml: an event parked and then delivered,
// an event given up on, the runbook's reset (the row set back to a pending
// value is sent once more), and the switch-over from the team's poller
// (the rows pending when the slot is created are sent once, no other).
// The order service's database runs in Europe/Berlin, and its sent_at
// (a timestamp without time zone) must be the UTC its created_at is in.

// statusLayout is one example's outbox table, as these tests write to it.
type statusLayout struct {
	dir string
	// insert adds one row and returns its id as text: @topic is what the
	// row holds of its topic (where it names one), @status its status,
	// @n a number for its payload. Its created_at is now, in UTC.
	insert string
	// topic returns, for a topic name, the row's part of it (@topic) and
	// the record's whole topic, under the test's topic prefix p.
	topic func(p, name string) (row, topic string)
	// namesTopic: the row names its topic, or part of it, so a row can
	// name an illegal one. Otherwise every row goes to one topic.
	namesTopic bool
	// reset is the team's runbook SQL that sends a row again ($1 its id).
	reset string
	// statuses is every value the status column allows.
	statuses []string
}

// statusLayouts insert each row with a key of its own: a parked event
// holds its key's later events (TestOrderHeldBehindARefusedRecord), which
// these tests do not look at.
var statusLayouts = []statusLayout{
	{
		dir: "notification-outbox",
		insert: `INSERT INTO notification_outbox (deal_id, recipient_id, template, payload, status)
			VALUES (1000 + @n::int, gen_random_uuid(), @topic, jsonb_build_object('n', @n::int), @status) RETURNING id::text`,
		topic:      func(p, name string) (string, string) { return name, p + ".notifications." + name },
		namesTopic: true,
		reset:      `UPDATE notification_outbox SET status = 'PENDING', retry_count = 0 WHERE id = $1`,
		statuses:   []string{"PENDING", "PROCESSING", "DELIVERED", "FAILED"},
	},
	{
		dir: "order-service-outbox",
		insert: `INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type, payload, status, created_at)
			VALUES (gen_random_uuid(), 'Order', gen_random_uuid(), 'OrderCreated', json_build_object('n', @n::int)::text, @status, now() AT TIME ZONE 'UTC')
			RETURNING id::text`,
		topic:    func(p, _ string) (string, string) { return "", p + ".order-events" },
		reset:    `UPDATE outbox SET status = 'NEW', error_message = NULL WHERE id = $1`,
		statuses: []string{"NEW", "SENT", "FAILED"},
	},
	{
		dir: "publisher-worker-outbox",
		insert: `INSERT INTO outbox (topic, key, payload_json, idempotency_key, status)
			VALUES (@topic, 'conversation-' || @n::int, jsonb_build_object('n', @n::int), gen_random_uuid()::text, @status::text::outbox_status_enum)
			RETURNING id::text`,
		topic:      func(p, name string) (string, string) { return p + ".chat." + name, p + ".chat." + name },
		namesTopic: true,
		reset:      `UPDATE outbox SET status = 'pending', retry_count = 0, next_attempt_at = now() WHERE id = $1`,
		statuses:   []string{"pending", "publishing", "published", "failed", "dead_lettered"},
	},
	{
		dir: "logistics-outbox",
		insert: `INSERT INTO outbox_events (id, aggregate_type, aggregate_id, event_type, payload, status)
			VALUES (gen_random_uuid(), @topic, gen_random_uuid(), 'OrderCreated', jsonb_build_object('n', @n::int), @status) RETURNING id::text`,
		topic:      func(p, name string) (string, string) { return name, p + ".logistics." + name },
		namesTopic: true,
		reset:      `UPDATE outbox_events SET status = 'PENDING', retry_count = 0, next_attempt_at = now(), last_error = NULL WHERE id = $1`,
		statuses:   []string{"PENDING", "PUBLISHED", "FAILED"},
	},
}

// statusEnv is one test's database with one layout's tables, and the
// example's relay.yaml with its topics under the test's prefix.
type statusEnv struct {
	*env
	l    statusLayout
	ex   exampleCase // the example's time zone
	path string      // the config file
	tbl  outbox.Table
	wb   *writeback.Columns
	n    int // rows inserted
}

// newStatusEnv prepares a database with the layout's schema (in the
// example's time zone, if it has one) and no slot yet; see statusEnv.
func newStatusEnv(t *testing.T, l statusLayout) *statusEnv {
	t.Helper()
	s := &statusEnv{env: newEnv(t), l: l}
	for _, ex := range exampleCases {
		if ex.dir == l.dir {
			s.ex = ex
		}
	}
	if s.ex.timeZone != "" {
		mustExec(t, s.conn, fmt.Sprintf("DO $$BEGIN EXECUTE format('ALTER DATABASE %%I SET timezone = %%L', current_database(), '%s'); END$$", s.ex.timeZone))
	}
	s.path = s.configUnderPrefix()
	file, err := config.Load(s.path)
	if err != nil {
		t.Fatal(err)
	}
	s.tbl = file.Tables[0]
	if s.wb = s.tbl.WriteBack; s.wb == nil {
		t.Fatalf("%s: no write_back", l.dir)
	}
	s.exampleSchema(l.dir)
	return s
}

// topicLine is a table's literal topic or topic template in relay.yaml.
var topicLine = regexp.MustCompile(`(?m)^(\s*topic:\s*"?)`)

// configUnderPrefix writes the example's relay.yaml, with its topic put
// under the test's prefix, to a file of the test's own, and returns its
// path: a shared broker (Apache Kafka) keeps the topics of earlier tests,
// and these tests need topics that do not exist yet.
func (s *statusEnv) configUnderPrefix() string {
	s.t.Helper()
	b, err := os.ReadFile(examplePath(s.l.dir))
	if err != nil {
		s.t.Fatal(err)
	}
	path := filepath.Join(s.t.TempDir(), "relay.yaml")
	if err := os.WriteFile(path, []byte(topicLine.ReplaceAllString(string(b), "${1}"+s.prefix+".")), 0o600); err != nil {
		s.t.Fatal(err)
	}
	return path
}

// run starts `run --config` with extra flags; topics are never created on
// demand, so that a topic the test did not create is missing.
func (s *statusEnv) run(extra ...string) *relayProc {
	s.t.Helper()
	args := append(s.configArgs(s.path), "--kafka-create-topics=false")
	return s.startRelayArgs(relayBin, append(args, extra...)...)
}

// insertRow inserts a row for the topic name with status, and returns its
// id and the record's topic.
func (s *statusEnv) insertRow(name, status string) (id, topic string) {
	s.t.Helper()
	row, topic := s.l.topic(s.prefix, name)
	s.n++
	if err := s.conn.QueryRow(context.Background(), s.l.insert,
		pgx.NamedArgs{"topic": row, "status": status, "n": s.n}).Scan(&id); err != nil {
		s.t.Fatalf("insert a %s row into %s: %v", status, s.tbl.Name(), err)
	}
	return id, topic
}

// insertPending inserts a row as the application does: with the first
// pending value.
func (s *statusEnv) insertPending(name string) (id, topic string) {
	s.t.Helper()
	return s.insertRow(name, s.wb.Pending[0])
}

// outboxRow is what an outbox row says of its event: the columns the
// layout writes back, where it has them.
type outboxRow struct {
	status string
	err    string  // the error column; "" when NULL or absent
	tries  int     // the attempts column; -1 when absent
	next   float64 // the next-attempt column, in seconds from now; 0 when NULL or absent
	// nextSet: the next-attempt column was written after the row was
	// inserted (it is later than the timestamp column).
	nextSet   bool
	delivered float64 // the delivered-at column as epoch seconds; 0 when NULL or absent
}

func (r outboxRow) String() string {
	return fmt.Sprintf("status %q, error %q, attempts %d, next attempt in %.1f s (written: %v), delivered at %.3f",
		r.status, r.err, r.tries, r.next, r.nextSet, r.delivered)
}

// row reads the outbox row with id.
func (s *statusEnv) row(id string) outboxRow {
	s.t.Helper()
	col := func(name, expr, absent string) string {
		if name == "" {
			return absent
		}
		return fmt.Sprintf(expr, pgx.Identifier{name}.Sanitize())
	}
	next := col(s.wb.NextAttemptColumn, "%s", "")
	nextIn, nextSet := "0::float8", "false"
	if next != "" {
		nextIn = "coalesce(extract(epoch FROM " + next + " - now()), 0)::float8"
		nextSet = fmt.Sprintf("coalesce(%s > %s, false)", next, pgx.Identifier{s.tbl.Mapping.TimestampColumn}.Sanitize())
	}
	q := fmt.Sprintf("SELECT %s::text, %s, %s, %s, %s, %s FROM %s WHERE %s::text = $1",
		pgx.Identifier{s.wb.StatusColumn}.Sanitize(),
		col(s.wb.ErrorColumn, "coalesce(%s::text, '')", "''"),
		col(s.wb.AttemptsColumn, "%s::int", "-1"),
		nextIn, nextSet,
		col(s.wb.DeliveredAtColumn, "coalesce(extract(epoch FROM %s), 0)::float8", "0::float8"),
		s.tbl.Name(), pgx.Identifier{s.tbl.Mapping.IDColumn}.Sanitize())
	var r outboxRow
	if err := s.conn.QueryRow(context.Background(), q, id).Scan(&r.status, &r.err, &r.tries, &r.next, &r.nextSet, &r.delivered); err != nil {
		s.t.Fatalf("read row %s of %s: %v", id, s.tbl.Name(), err)
	}
	return r
}

// waitRow polls the row with id until cond holds, and fails the test after
// timeout with what the row said last.
func (s *statusEnv) waitRow(id, what string, timeout time.Duration, cond func(outboxRow) bool) outboxRow {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r := s.row(id)
		if cond(r) {
			return r
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("timed out after %s waiting until row %s of %s %s: it says %s", timeout, id, s.tbl.Name(), what, r)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitDelivered waits until the row with id says delivered, with its
// delivered-at column (if any) set.
func (s *statusEnv) waitDelivered(id string, timeout time.Duration) outboxRow {
	s.t.Helper()
	return s.waitRow(id, "says "+s.wb.Delivered, timeout, func(r outboxRow) bool {
		return r.status == s.wb.Delivered && (s.wb.DeliveredAtColumn == "" || r.delivered > 0)
	})
}

// parked is what the status table says of the event with id (its newest
// row): "" when it holds none.
func (s *statusEnv) parked(id string) (status string, attempts int) {
	s.t.Helper()
	err := s.conn.QueryRow(context.Background(),
		"SELECT status, attempts FROM outbox_delivery WHERE event_id = $1 ORDER BY id DESC LIMIT 1", id).Scan(&status, &attempts)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", 0
	}
	if err != nil {
		s.t.Fatal(err)
	}
	return status, attempts
}

// waitParked waits until the status table says state of the event with id.
func (s *statusEnv) waitParked(id, state string, timeout time.Duration) {
	s.t.Helper()
	var got string
	deadline := time.Now().Add(timeout)
	for got, _ = s.parked(id); got != state; got, _ = s.parked(id) {
		if time.Now().After(deadline) {
			s.t.Fatalf("timed out after %s waiting until the status table says %s of event %s: it says %q (row: %s)", timeout, state, id, got, s.row(id))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// records counts topic's records by their id header.
func (s *statusEnv) records(topic string) map[string]int {
	s.t.Helper()
	n := map[string]int{}
	for _, r := range s.readAll(topic) {
		n[header(r, "id")]++
	}
	return n
}

// checkTimes checks, for a layout whose example sets a time zone, that the
// rows delivered have the same time in both columns the example names.
func (s *statusEnv) checkTimes() {
	s.t.Helper()
	if s.ex.sameTime[0] != "" {
		s.checkSameTime(s.ex.sameTime, s.ex.timeZone)
	}
}

// TestStatusColumnParkedThenDelivered: an event for a topic that does not
// exist yet is parked, and its row says failed, with the reason, the
// attempts and the next attempt where the table has those columns; once
// the topic exists the poller delivers it, once, and the row says
// delivered (attempts at least 1), as the status table does.
func TestStatusColumnParkedThenDelivered(t *testing.T) {
	parallel(t)
	for _, l := range statusLayouts {
		t.Run(l.dir, func(t *testing.T) {
			s := newStatusEnv(t, l)
			s.migrateConfig(s.path)
			p := s.run("--retry-base", "200ms", "--retry-max", "1s", "--max-attempts", "1000")
			id, topic := s.insertPending("parked")
			retrying := s.wb.RetryingValue()
			r := s.waitRow(id, "says "+retrying+" with its attempts and its reason", 30*time.Second, func(r outboxRow) bool {
				return r.status == retrying && (s.wb.AttemptsColumn == "" || r.tries >= 1) && (s.wb.ErrorColumn == "" || r.err != "")
			})
			if state, _ := s.parked(id); state != "FAILED" {
				t.Errorf("the row says %s while the status table says %q, want FAILED", retrying, state)
			}
			if s.wb.ErrorColumn != "" && r.err == "" {
				t.Errorf("the parked row's %s is empty, want why", s.wb.ErrorColumn)
			}
			if s.wb.AttemptsColumn != "" && r.tries < 1 {
				t.Errorf("the parked row's %s is %d, want at least 1", s.wb.AttemptsColumn, r.tries)
			}
			if s.wb.NextAttemptColumn != "" && !r.nextSet {
				t.Errorf("the parked row's %s was not written: %s", s.wb.NextAttemptColumn, r)
			}
			if n := len(s.endOffsets(s.client(), topic)); n != 0 {
				t.Fatalf("topic %s exists (%d partitions): topic creation was not off", topic, n)
			}

			s.createTopic(topic, nil)
			r = s.waitDelivered(id, 30*time.Second)
			if s.wb.AttemptsColumn != "" && r.tries < 1 {
				t.Errorf("the delivered row's %s is %d, want the failed attempts, at least 1", s.wb.AttemptsColumn, r.tries)
			}
			if state, _ := s.parked(id); state != "DELIVERED" {
				t.Errorf("the row says %s while the status table says %q, want DELIVERED", s.wb.Delivered, state)
			}
			if n := s.records(topic); n[id] != 1 || len(n) != 1 {
				t.Errorf("%s holds %v records by id, want one of %s", topic, n, id)
			}
			s.checkTimes()
			p.stop(30 * time.Second)
		})
	}
}

// TestStatusColumnDead: an event given up on says the table's dead value
// (its failed value when it has none), with the reason where the table has
// an error column, as soon as the status table says DEAD: a row that
// cannot become a record (an illegal topic name), at once, where the row
// names its topic; and an event whose last attempt failed
// (--max-attempts 1: the poller's first).
func TestStatusColumnDead(t *testing.T) {
	parallel(t)
	for _, l := range statusLayouts {
		t.Run(l.dir, func(t *testing.T) {
			s := newStatusEnv(t, l)
			s.migrateConfig(s.path)
			p := s.run("--retry-base", "200ms", "--retry-max", "1s", "--max-attempts", "1")
			type dead struct{ id, why, mustSay string }
			var rows []dead
			if l.namesTopic {
				id, _ := s.insertPending("bad topic!")
				rows = append(rows, dead{id, "an illegal topic", "illegal"})
			}
			id, _ := s.insertPending("given-up")
			rows = append(rows, dead{id, "its last attempt failed", ""})
			for _, d := range rows {
				s.waitParked(d.id, "DEAD", 30*time.Second)
				r := s.row(d.id)
				if r.status != s.wb.DeadValue() {
					t.Errorf("%s: the status table says DEAD, the row %s", d.why, r)
				}
				if s.wb.ErrorColumn != "" && (r.err == "" || !strings.Contains(r.err, d.mustSay)) {
					t.Errorf("%s: the row's %s is %q, want why (%q)", d.why, s.wb.ErrorColumn, r.err, d.mustSay)
				}
				if s.wb.AttemptsColumn != "" && r.tries < 1 {
					t.Errorf("%s: the row's %s is %d, want at least 1", d.why, s.wb.AttemptsColumn, r.tries)
				}
			}
			p.stop(30 * time.Second)
		})
	}
}

// TestStatusColumnReset: the team's runbook sends an event again by
// setting its row back to a pending value. On a delivered row, and on a
// row still FAILED (its topic was missing when it was parked and when the
// poller first tried it; the topic was created, and the next attempt is
// ten minutes away), the team's own UPDATE sends each event exactly once
// more, within seconds, and the row says delivered again, at a new time.
func TestStatusColumnReset(t *testing.T) {
	parallel(t)
	for _, l := range statusLayouts {
		t.Run(l.dir, func(t *testing.T) {
			s := newStatusEnv(t, l)
			s.migrateConfig(s.path)
			p := s.run("--retry-base", "10m", "--retry-max", "10m", "--max-attempts", "1000")
			failed, topic := s.insertPending("reset")
			retrying := s.wb.RetryingValue()
			s.waitRow(failed, "says "+retrying, 30*time.Second, func(r outboxRow) bool { return r.status == retrying })
			s.waitFor("the poller's first attempt fails", 30*time.Second, func() bool {
				state, attempts := s.parked(failed)
				return state == "FAILED" && attempts >= 1
			})
			if r := s.row(failed); s.wb.NextAttemptColumn != "" && (r.next < 5*60 || r.next > 15*60) {
				t.Errorf("after the poller's attempt, the row says %s; want its next attempt in about 10 minutes", r)
			}
			s.createTopic(topic, nil)
			cl := s.client()
			s.waitFor("the broker knows the new topic", 30*time.Second, func() bool { return len(s.endOffsets(cl, topic)) > 0 })
			delivered, _ := s.insertPending("reset") // the relay's producer must not find the topic missing
			before := s.waitDelivered(delivered, 30*time.Second)
			if s.row(failed).status != retrying {
				t.Fatalf("the failed row says %s before the reset: the poller tried it again", s.row(failed))
			}
			counts := s.records(topic)
			if counts[delivered] != 1 || counts[failed] != 0 {
				t.Fatalf("before the reset %s holds %v records by id, want one of %s and none of %s", topic, counts, delivered, failed)
			}

			for _, id := range []string{delivered, failed} {
				mustExec(t, s.conn, l.reset, id)
			}
			for _, id := range []string{delivered, failed} {
				r := s.waitDelivered(id, 20*time.Second)
				if id == delivered && s.wb.DeliveredAtColumn != "" && r.delivered <= before.delivered {
					t.Errorf("the delivered row's %s did not move on: %.3f, then %.3f", s.wb.DeliveredAtColumn, before.delivered, r.delivered)
				}
			}
			s.waitFor("the status table has no event left to send", 20*time.Second, func() bool { return s.statusCount("FAILED") == 0 })
			after := s.records(topic)
			if after[delivered] != counts[delivered]+1 || after[failed] != counts[failed]+1 || len(after) != 2 {
				t.Errorf("%s holds %v records by id after the reset, %v before; want one more of %s and of %s", topic, after, counts, delivered, failed)
			}
			s.checkTimes()
			p.stop(30 * time.Second)
		})
	}
}

// TestStatusColumnSwitchOver: the switch from the team's poller. Rows in
// every status the table has are there before the relay's slot exists
// (the old poller's: pending ones, delivered ones, failed ones…); the slot
// is created by `migrate --config`, or by the first `run` when migrate did
// not; rows are inserted after it too. Exactly the rows pending when the
// slot was created (and those in a value that means only "tried again
// later", the publisher worker's failed, due in an hour: sent at once)
// are sent, once each, and every row inserted after it;
// no other row is sent, and the others keep their status; every row sent
// ends delivered.
func TestStatusColumnSwitchOver(t *testing.T) {
	parallel(t)
	for _, l := range statusLayouts {
		for _, by := range []string{"migrate", "run"} {
			t.Run(l.dir+"/slot_by_"+by, func(t *testing.T) {
				s := newStatusEnv(t, l)
				_, topic := s.l.topic(s.prefix, "switch")
				s.createTopic(topic, nil)
				old := map[string]string{} // id → status
				var send []string
				for _, status := range l.statuses {
					for range 2 {
						id, _ := s.insertRow("switch", status)
						old[id] = status
						if slices.Contains(s.wb.AdoptedValues(), status) {
							send = append(send, id)
						}
					}
				}
				if v := s.wb.RetryingValue(); s.wb.RetryScheduled() && s.wb.NextAttemptColumn != "" {
					// The old poller's "retry scheduled" rows, due in an
					// hour: adopted, they are sent at once.
					mustExec(t, s.conn, fmt.Sprintf("UPDATE %s SET %s = now() + interval '1 hour' WHERE %s::text = $1", s.tbl.Name(),
						pgx.Identifier{s.wb.NextAttemptColumn}.Sanitize(), pgx.Identifier{s.wb.StatusColumn}.Sanitize()), v)
				}
				adopted := len(send)
				var p *relayProc
				if by == "migrate" {
					if out := s.migrateConfig(s.path); !saysAdopted(out, adopted) {
						t.Errorf("migrate does not say it adopted %d rows:\n%s", adopted, out)
					}
					id, _ := s.insertPending("switch") // after the slot, before the relay runs
					send = append(send, id)
					p = s.run()
				} else {
					s.migrateConfig(s.path, "--no-slot")
					p = s.run()
				}
				for range 2 {
					id, _ := s.insertPending("switch")
					send = append(send, id)
				}

				s.readIDs(topic, send, 20*time.Second)
				for _, id := range send {
					s.waitDelivered(id, 20*time.Second)
				}
				s.waitFor("the status table has no event left to send", 20*time.Second, func() bool { return s.statusCount("FAILED") == 0 })
				if by == "run" && !saysAdopted(p.Log(), adopted) {
					t.Errorf("run does not log that it adopted %d rows", adopted)
				}
				got := s.records(topic)
				for _, id := range send {
					if got[id] != 1 {
						t.Errorf("row %s (%s) was sent %d times, want once", id, describe(old[id]), got[id])
					}
				}
				for id, n := range got {
					if !slices.Contains(send, id) {
						t.Errorf("row %s (%s before the slot) was sent %d times, want never", id, old[id], n)
					}
				}
				for id, status := range old {
					if r := s.row(id); !slices.Contains(send, id) && r.status != status {
						t.Errorf("row %s was %s before the slot and was not sent, and now says %s", id, status, r)
					}
				}
				s.checkTimes()
				p.stop(30 * time.Second)
			})
		}
	}
}

// describe names a row of the switch-over by the status it had before the
// slot existed ("" for a row inserted after).
func describe(status string) string {
	if status == "" {
		return "inserted after the slot"
	}
	return status + " before the slot"
}

// saysAdopted reports whether a line of out that speaks of adopting rows
// gives the number n.
func saysAdopted(out string, n int) bool {
	num := regexp.MustCompile(`\b` + strconv.Itoa(n) + `\b`)
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(strings.ToLower(line), "adopt") && num.MatchString(line) {
			return true
		}
	}
	return false
}

// TestStatusColumnRetryingIsNotFailed: each team's own lifecycle under a
// writer (about 150 rows a second, in three half-second phases), as its
// alerts read it. Rows for a topic that does not exist yet are refused
// and tried again: each reads
// the team's retrying value with its attempts counted (notification and
// logistics: PENDING and retry_count; order service: NEW and
// error_message; publisher worker: failed and retry_count), and not one
// row reads the team's terminal value (its FAILED alert, a dead-letter
// alarm, stays silent) while they are retried, nor once the topic exists
// and every row is delivered, once, its error cleared and its last
// attempt stamped.
func TestStatusColumnRetryingIsNotFailed(t *testing.T) {
	parallel(t)
	for _, l := range statusLayouts {
		t.Run(l.dir, func(t *testing.T) {
			s := newStatusEnv(t, l)
			s.migrateConfig(s.path)
			p := s.run("--retry-base", "200ms", "--retry-max", "500ms", "--max-attempts", "1000")
			dead := s.wb.DeadValue()
			if !s.wb.RetryScheduled() {
				t.Fatalf("%s: the retrying value is the dead one (%q): the example's write_back follows the old lifecycle", l.dir, dead)
			}
			countDead := fmt.Sprintf("SELECT count(*) FROM %s WHERE %s::text = $1", s.tbl.Name(), pgx.Identifier{s.wb.StatusColumn}.Sanitize())
			deadSeen := 0
			sample := func() {
				t.Helper()
				var n int
				if err := s.conn.QueryRow(context.Background(), countDead, dead).Scan(&n); err != nil {
					t.Fatal(err)
				}
				deadSeen = max(deadSeen, n)
			}
			var ids []string
			var topic string
			write := func(d time.Duration) {
				t.Helper()
				for end := time.Now().Add(d); time.Now().Before(end); {
					var id string
					id, topic = s.insertPending("retried")
					ids = append(ids, id)
					sample()
					time.Sleep(5 * time.Millisecond)
				}
			}
			write(500 * time.Millisecond)
			retrying := s.wb.RetryingValue()
			s.waitRow(ids[0], fmt.Sprintf("says %s, tried again", retrying), 30*time.Second, func(r outboxRow) bool {
				sample()
				return r.status == retrying && (s.wb.AttemptsColumn == "" || r.tries >= 2) && (s.wb.ErrorColumn == "" || r.err != "")
			})
			write(500 * time.Millisecond)
			s.createTopic(topic, nil)
			write(500 * time.Millisecond)
			s.readIDs(topic, ids, 60*time.Second)
			for _, id := range ids {
				s.waitDelivered(id, 30*time.Second)
			}
			sample()
			if deadSeen > 0 {
				t.Errorf("%d rows read %q, the team's terminal value, while their events were retried and delivered; want none", deadSeen, dead)
			}
			got := s.records(topic)
			for _, id := range ids {
				if got[id] != 1 {
					t.Errorf("row %s was sent %d times, want once", id, got[id])
				}
			}
			if s.wb.ErrorColumn != "" && !s.wb.KeepError {
				var kept int
				q := fmt.Sprintf("SELECT count(*) FROM %s WHERE %s IS NOT NULL", s.tbl.Name(), pgx.Identifier{s.wb.ErrorColumn}.Sanitize())
				if err := s.conn.QueryRow(context.Background(), q).Scan(&kept); err != nil || kept != 0 {
					t.Errorf("%d delivered rows keep an error in %s (%v), want none", kept, s.wb.ErrorColumn, err)
				}
			}
			if c := s.wb.LastAttemptColumn; c != "" {
				var unset int
				q := fmt.Sprintf("SELECT count(*) FROM %s WHERE %s IS NULL", s.tbl.Name(), pgx.Identifier{c}.Sanitize())
				if err := s.conn.QueryRow(context.Background(), q).Scan(&unset); err != nil || unset != 0 {
					t.Errorf("%d delivered rows have no %s (%v), want none", unset, c, err)
				}
			}
			t.Logf("%d rows, %d parked and retried before the topic existed", len(ids), s.statusCount("DELIVERED"))
			p.stop(30 * time.Second)
		})
	}
}

// TestStatusColumnLocalTime: an application that writes local time
// (LocalDateTime.now() in a New York database) into the order service's
// timestamp columns without time zone, and the table's time_zone saying
// so: each record's Kafka timestamp is within seconds of when its row was
// written, and its sent_at is New York's wall time then, not five hours
// off. Rows parked first (their topic missing) and sent by the poller read
// the same.
func TestStatusColumnLocalTime(t *testing.T) {
	parallel(t)
	l := statusLayouts[slices.IndexFunc(statusLayouts, func(l statusLayout) bool { return l.dir == "order-service-outbox" })]
	l.insert = strings.Replace(l.insert, "now() AT TIME ZONE 'UTC'", "LOCALTIMESTAMP", 1)
	s := newStatusEnv(t, l)
	mustExec(t, s.conn, "DO $$BEGIN EXECUTE format('ALTER DATABASE %I SET timezone = %L', current_database(), 'America/New_York'); END$$")
	b, err := os.ReadFile(s.path)
	if err != nil {
		t.Fatal(err)
	}
	zoned := strings.Replace(string(b), "    timestamp: created_at", "    time_zone: America/New_York\n    timestamp: created_at", 1)
	if zoned == string(b) {
		t.Fatal("the example's relay.yaml has no timestamp line to put time_zone beside")
	}
	if err := os.WriteFile(s.path, []byte(zoned), 0o600); err != nil {
		t.Fatal(err)
	}
	first := s.conn
	s.conn = mustConnect(t, s.url) // a session in the database's new time zone
	first.Close(context.Background())
	t.Cleanup(func() { s.conn.Close(context.Background()) })
	s.migrateConfig(s.path)
	p := s.run("--retry-base", "200ms", "--retry-max", "500ms")
	parked, topic := s.insertPending("local")
	s.waitRow(parked, "is tried again", 30*time.Second, func(r outboxRow) bool { return r.err != "" })
	s.createTopic(topic, nil)
	cl := s.client()
	s.waitFor("the broker knows the new topic", 30*time.Second, func() bool { return len(s.endOffsets(cl, topic)) > 0 })
	streamed, _ := s.insertPending("local")
	ids := []string{parked, streamed}
	s.readIDs(topic, ids, 30*time.Second)
	for _, id := range ids {
		s.waitDelivered(id, 30*time.Second)
	}
	for _, r := range s.readAll(topic) {
		id := header(r, "id")
		var written time.Time
		var sentOff float64
		if err := s.conn.QueryRow(context.Background(), `SELECT created_at AT TIME ZONE 'America/New_York',
			extract(epoch FROM sent_at - LOCALTIMESTAMP)::float8 FROM outbox WHERE id::text = $1`, id).Scan(&written, &sentOff); err != nil {
			t.Fatal(err)
		}
		if d := r.Timestamp.Sub(written); d < -time.Second || d > time.Second {
			t.Errorf("row %s written at %s has Kafka timestamp %s: %s off", id, written.UTC(), r.Timestamp.UTC(), d)
		}
		if sentOff > 0 || sentOff < -60 {
			t.Errorf("row %s's sent_at is %.0f s from New York's wall time now, want within the last minute", id, sentOff)
		}
	}
	p.stop(30 * time.Second)
}

// TestStatusColumnTopicFixedDuringRetries: the logistics runbook fixes a
// misspelt topic while the relay retries the events (every 200 to 500 ms):
// `UPDATE … SET status = 'PENDING', aggregate_type = 'Invoice'` on 20 rows
// being tried again, a row at a time. Every row ends PUBLISHED, with one
// copy on the fixed topic and none on the misspelt one (which never
// exists), and no row ever reads FAILED, the team's dead-letter value,
// nor does any event end DEAD: a reset that lands mid-attempt supersedes
// the attempt.
func TestStatusColumnTopicFixedDuringRetries(t *testing.T) {
	parallel(t)
	l := statusLayouts[slices.IndexFunc(statusLayouts, func(l statusLayout) bool { return l.dir == "logistics-outbox" })]
	s := newStatusEnv(t, l)
	s.migrateConfig(s.path)
	_, fixed := s.l.topic(s.prefix, "Invoice")
	s.createTopic(fixed, nil)
	p := s.run("--retry-base", "200ms", "--retry-max", "500ms", "--max-attempts", "1000")
	var ids []string
	for range 20 {
		id, _ := s.insertPending("Invioce")
		ids = append(ids, id)
	}
	countFailed := func() int {
		var n int
		if err := s.conn.QueryRow(context.Background(), "SELECT count(*) FROM outbox_events WHERE status = 'FAILED'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, id := range ids {
		s.waitRow(id, "is tried again", 30*time.Second, func(r outboxRow) bool { return r.status == "PENDING" && r.tries >= 2 })
	}
	failedSeen := 0
	for _, id := range ids {
		mustExec(t, s.conn, "UPDATE outbox_events SET status = 'PENDING', aggregate_type = 'Invoice', retry_count = 0 WHERE id = $1", id)
		failedSeen = max(failedSeen, countFailed())
		time.Sleep(50 * time.Millisecond) // spreads the resets over the retries' rounds: pacing, not synchronisation
	}
	s.readIDs(fixed, ids, 60*time.Second)
	for _, id := range ids {
		s.waitRow(id, "says PUBLISHED", 30*time.Second, func(r outboxRow) bool {
			failedSeen = max(failedSeen, countFailed())
			return r.status == "PUBLISHED"
		})
	}
	s.waitFor("the status table has nothing left to send", 20*time.Second, func() bool { return s.statusCount("FAILED") == 0 })
	if failedSeen > 0 || s.statusCount("DEAD") > 0 {
		t.Errorf("%d rows read FAILED, %d events DEAD; want none: the reset supersedes the attempt", failedSeen, s.statusCount("DEAD"))
	}
	got := s.records(fixed)
	for _, id := range ids {
		if got[id] != 1 {
			t.Errorf("row %s has %d copies on %s, want one", id, got[id], fixed)
		}
	}
	_, misspelt := s.l.topic(s.prefix, "Invioce")
	if n := len(s.endOffsets(s.client(), misspelt)); n != 0 {
		t.Errorf("the misspelt topic %s exists (%d partitions): a copy went there", misspelt, n)
	}
	p.stop(30 * time.Second)
}
