package e2e

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestSwitchOverByPredicate: the event store of examples/ switches over
// from a poller whose progress rows (outbox_topic_progress) say it sent
// wallet-events up to position 4,000 and payment-events up to 3,000:
// 10,000 events were written before, and an application keeps appending
// while the slot is created, by `migrate --config` (with the example's own
// adopt: line of each route) or by the first `run`, and while `run`
// streams. Exactly the events after each topic's position arrive in it,
// once, and so does every event appended later, whether its commit came
// before the slot's snapshot (adopted) or after (streamed); none up to
// its position arrives. Then the relay keeps those rows true: the team's
// lag query reads 0. CDC_RELAY_TEST_ADOPT_EVENTS sets the events before
// (the progress rows at 40% and 30% of them); the test logs how long the
// adoption and the poller's sending took.
func TestSwitchOverByPredicate(t *testing.T) {
	parallel(t)
	events := 10000
	if v := os.Getenv("CDC_RELAY_TEST_ADOPT_EVENTS"); v != "" {
		var err error
		if events, err = strconv.Atoi(v); err != nil {
			t.Fatalf("CDC_RELAY_TEST_ADOPT_EVENTS=%q: %v", v, err)
		}
	}
	for _, by := range []string{"migrate", "run"} {
		t.Run("slot_by_"+by, func(t *testing.T) {
			e := newEnv(t)
			e.exampleSchema("event-store-tags")
			path, wallet, payment := e.adoptExampleConfig(true)
			mustExec(t, e.conn, `INSERT INTO events (type, tags, data, transaction_id)
				SELECT 'DepositMade', `+adoptTags+`, json_build_object('n', i), pg_current_xact_id() FROM generate_series(1, $1) AS i`, events)
			// The old poller's rows: each topic at its own position.
			mustExec(t, e.conn, `INSERT INTO outbox_topic_progress (topic, publisher, last_position) VALUES ($1, 'KafkaPublisher', $2), ($3, 'KafkaPublisher', $4)`,
				wallet, events*2/5, payment, events*3/10)

			app := e.appendEvents()
			e.waitFor("the application appended while no slot exists", 30*time.Second, func() bool { return app.appended.Load() >= 100 })
			p, start := e.switchOver(by, path, events)
			since := app.appended.Load()
			e.waitFor("the application appended while the relay streams", 60*time.Second, func() bool { return app.appended.Load() >= since+300 })
			if err := app.stop(); err != nil {
				t.Fatal(err)
			}

			want := e.routedCopies(wallet, payment, events*2/5, events*3/5)
			want[payment] = e.routedCopies(wallet, payment, events*3/10, events*7/10)[payment]
			for _, topic := range []string{wallet, payment} {
				e.readIDs(topic, want[topic], 180*time.Second+time.Duration(events)*time.Millisecond)
			}
			end := e.lsn(currentLSN)
			e.waitFor("the stream confirmed and the poller sent every adopted row", 60*time.Second, func() bool {
				return e.lsn(slotLSN) >= end && e.statusCount("FAILED") == 0
			})
			t.Logf("the relay sent every adopted row within %v", time.Since(start).Round(time.Millisecond))
			for _, topic := range []string{wallet, payment} {
				e.checkOnce(topic, want[topic])
			}
			if n := e.statusCount("DEAD"); n != 0 {
				t.Errorf("%d adopted rows DEAD, want none", n)
			}
			e.waitFor("the relay's progress rows reach the newest position", 30*time.Second, func() bool {
				var behind int
				err := e.conn.QueryRow(context.Background(), "SELECT count(*) FROM outbox_topic_progress WHERE publisher = 'KafkaPublisher' AND last_position < (SELECT max(position) FROM events)").Scan(&behind)
				if err != nil {
					t.Fatal(err)
				}
				return behind == 0
			})
			if by == "run" {
				e.checkRunAdopted(p, events)
			}
			t.Logf("%d events appended around the switch-over; %d and %d records", app.appended.Load(), len(want[wallet]), len(want[payment]))
			p.stop(30 * time.Second)
		})
	}
}

// switchOver creates the slot of the config at path, by `migrate` or by
// the first `run`, and returns the relay, streaming, and when the relay's
// part began (after migrate's adoption, which it logs).
func (e *env) switchOver(by, path string, events int) (*relayProc, time.Time) {
	e.t.Helper()
	start := time.Now()
	if by == "migrate" {
		out := e.migrateConfig(path)
		e.checkAdoptedLine(out, events)
		e.t.Logf("migrate adopted in %v", time.Since(start).Round(time.Millisecond))
		start = time.Now()
	} else {
		e.migrateConfig(path, "--no-slot")
	}
	return e.startRelayArgs(relayBin, e.configArgs(path)...), start
}

// checkRunAdopted checks that the first run adopted at least the events
// after the progress row of the events before, and that its log says how
// many.
func (e *env) checkRunAdopted(p *relayProc, events int) {
	e.t.Helper()
	var adopted int
	if err := e.conn.QueryRow(context.Background(), "SELECT count(*) FROM outbox_delivery WHERE reload").Scan(&adopted); err != nil {
		e.t.Fatal(err)
	}
	if adopted < events*3/5 || !saysAdopted(p.Log(), adopted) {
		e.t.Errorf("run adopted %d copies, want at least %d, and its log should say so", adopted, events*3/5)
	}
}

// TestRunStopsOnARefusedAdopt: the documented path of a migrate without
// the slot, then the first run as the role `migrate --print-grants`
// describes, which may not read the poller's progress table that the
// example's adopt: reads: run stops at once, creating no slot, with
// PostgreSQL's refusal and the GRANT to run, and the printed grants say
// that the predicate's tables need SELECT; once granted, run adopts, and
// the next run, with the slot there, warns that adopt: is ignored.
func TestRunStopsOnARefusedAdopt(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	e.exampleSchema("event-store-tags")
	path, wallet, payment := e.adoptExampleConfig(false) // its grants would cover the progress table
	mustExec(t, e.conn, `INSERT INTO events (type, tags, data, transaction_id) SELECT 'DepositMade', ARRAY['wallet_id=w'], '{}', pg_current_xact_id() FROM generate_series(1, 10)`)
	mustExec(t, e.conn, `INSERT INTO outbox_topic_progress (topic, publisher, last_position) VALUES ($1, 'KafkaPublisher', 4), ($2, 'KafkaPublisher', 10)`, wallet, payment)
	e.migrateConfig(path, "--no-slot")
	role := e.slot + "_role"
	args := e.configGrantedRole(path, role)

	p := e.spawnRelayArgs(relayBin, args...)
	e.waitFor("the relay stops on the refused predicate", 60*time.Second, func() bool { return !p.Running() })
	log := p.Log()
	for _, want := range []string{"permission denied for table outbox_topic_progress", "no slot was created",
		"fix adopt: in the config, or GRANT SELECT ON outbox_topic_progress TO ", role} {
		if !strings.Contains(log, want) {
			t.Errorf("the relay's log lacks %q", want)
		}
	}
	if n := strings.Count(log, "permission denied"); n > 2 || e.slotExists() || p.Err() == nil {
		t.Errorf("%d refusals in the log, slot exists %v, exit %v; want one refusal, no slot, an error exit:\n%s", n, e.slotExists(), p.Err(), log)
	}

	mustExec(t, e.conn, "GRANT SELECT ON outbox_topic_progress TO "+role)
	p = e.startRelayArgs(relayBin, args...)
	e.waitFor("run adopts the 6 events after the progress row", 30*time.Second, func() bool { return saysAdopted(p.Log(), 6) })
	p.stop(30 * time.Second)

	p = e.startRelayArgs(relayBin, args...)
	if log := p.Log(); !strings.Contains(log, "adopt: is ignored: the replication slot exists") || strings.Contains(log, "adopted the rows selected") {
		t.Errorf("a run with the slot there should warn that adopt: is ignored, and adopt nothing:\n%s", log)
	}
	p.stop(30 * time.Second)
}

// configGrantedRole creates role with the grants `migrate --print-grants
// --config path` prints, which must say that the adopt: predicate's tables
// need SELECT, drops it when the test ends, and returns the arguments of
// `run --config path` as the role.
func (e *env) configGrantedRole(path, role string) []string {
	e.t.Helper()
	out, err := exec.Command(relayBin, "migrate", "--config", path, "--print-grants", role).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "SELECT on the tables your adopt: predicate reads") {
		e.t.Fatalf("migrate --print-grants: %v, want a line on the adopt: predicate's tables:\n%s", err, out)
	}
	if _, err := e.conn.PgConn().Exec(context.Background(), string(out)).ReadAll(); err != nil {
		e.t.Fatalf("run the printed grants: %v\n%s", err, out)
	}
	e.t.Cleanup(func() {
		_, _ = e.conn.Exec(context.Background(), "DROP OWNED BY "+role)
		_, _ = e.conn.Exec(context.Background(), "DROP ROLE "+role)
	})
	u, err := url.Parse(e.url)
	if err != nil {
		e.t.Fatal(err)
	}
	u.User = url.User(role)
	args := e.configArgs(path)
	args[slices.Index(args, e.url)] = u.String()
	return args
}

// checkAdoptedLine checks that migrate's output says how many copies it
// adopted, as many as the status table holds, and at least those of the
// events after the progress row of the events before.
func (e *env) checkAdoptedLine(out string, events int) {
	e.t.Helper()
	var adopted int
	if err := e.conn.QueryRow(context.Background(), "SELECT count(*) FROM outbox_delivery WHERE reload").Scan(&adopted); err != nil {
		e.t.Fatal(err)
	}
	if adopted < events*3/5 || !regexp.MustCompile(`adopted `+strconv.Itoa(adopted)+` row\(s\) that adopt selected`).MatchString(out) {
		e.t.Errorf("migrate adopted %d copies (want at least the %d of the events after the progress row), and says:\n%s", adopted, events*3/5, out)
	}
}

// adoptTags are the tags of event i: one in three to wallet-events, one to
// both topics, one to no topic.
const adoptTags = `CASE i % 3 WHEN 0 THEN ARRAY['wallet_id=w' || i] WHEN 1 THEN ARRAY['wallet_id=w' || i, 'payment_id=p' || i]
	ELSE ARRAY['from_wallet_id=a' || i, 'to_wallet_id=b' || i] END`

// adoptExampleConfig writes the event store's relay.yaml with its routes'
// adopt: lines in force, and topics of the test's own on a broker the
// suite shares; it returns its path and the two topics. Without progress,
// its progress: line is left out.
func (e *env) adoptExampleConfig(progress bool) (path, wallet, payment string) {
	e.t.Helper()
	example, err := os.ReadFile(examplePath("event-store-tags"))
	if err != nil {
		e.t.Fatal(err)
	}
	if n := strings.Count(string(example), "        # adopt: "); n != 2 {
		e.t.Fatalf("the event store's relay.yaml has %d route adopt: lines to uncomment, want 2", n)
	}
	yaml := strings.ReplaceAll(string(example), "        # adopt: ", "        adopt: ")
	if !progress {
		yaml = regexp.MustCompile(`(?m)^    progress: .*\n`).ReplaceAllString(yaml, "")
	}
	wallet, payment = e.topic("wallet-events"), e.topic("payment-events")
	yaml = strings.NewReplacer("wallet-events", wallet, "payment-events", payment).Replace(yaml)
	path = filepath.Join(e.t.TempDir(), "relay.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return path, wallet, payment
}

// appender is an application writing to the database until stopped.
type appender struct {
	appended atomic.Int64 // events committed
	done     chan error
	quit     chan struct{}
}

// startAppender starts an application that, on a connection of its own to
// url, runs the statement next(i) gives (its text and arguments) the i-th
// time, from 0, counting per events for each in appended and then waiting
// pace, until stopped; the test's end stops it.
func startAppender(t *testing.T, url string, per int64, pace time.Duration, next func(i int64) (string, []any)) *appender {
	a := &appender{done: make(chan error, 1), quit: make(chan struct{})}
	go func() {
		c, err := pgx.Connect(context.Background(), url)
		if err != nil {
			a.done <- err
			return
		}
		defer c.Close(context.Background())
		for i := int64(0); ; i++ {
			select {
			case <-a.quit:
				a.done <- nil
				return
			default:
			}
			stmt, args := next(i)
			if _, err := c.Exec(context.Background(), stmt, args...); err != nil {
				a.done <- err
				return
			}
			a.appended.Add(per)
			time.Sleep(pace) // an application's pace
		}
	}()
	t.Cleanup(func() { _ = a.stop() })
	return a
}

// appendEvents starts an application that appends three events per
// transaction, tagged as adoptTags, at an application's pace.
func (e *env) appendEvents() *appender {
	return startAppender(e.t, e.url, 3, 2*time.Millisecond, func(int64) (string, []any) {
		return `INSERT INTO events (type, tags, data, transaction_id)
			SELECT 'PaymentMade', ` + adoptTags + `, '{}', pg_current_xact_id() FROM generate_series(1, 3) AS i`, nil
	})
}

// stop stops the application and returns its error; it may be called
// twice.
func (a *appender) stop() error {
	select {
	case <-a.quit:
		return nil
	default:
		close(a.quit)
	}
	return <-a.done
}

// routedCopies reads the positions of the events after progress (at
// least atLeast of them) and returns, per topic, those their tags route to
// it, as the example's routes do.
func (e *env) routedCopies(wallet, payment string, progress, atLeast int) map[string][]string {
	e.t.Helper()
	rows, _ := e.conn.Query(context.Background(), "SELECT position::text, tags FROM events WHERE position > $1 ORDER BY position", progress)
	defer rows.Close()
	want := map[string][]string{}
	var n int
	for rows.Next() {
		var id string
		var tags []string
		if err := rows.Scan(&id, &tags); err != nil {
			e.t.Fatal(err)
		}
		n++
		if hasTagKey(tags, "wallet_id") {
			want[wallet] = append(want[wallet], id)
		}
		if hasTagKey(tags, "payment_id") || hasTagKey(tags, "transfer_id") {
			want[payment] = append(want[payment], id)
		}
	}
	if rows.Err() != nil || n < atLeast {
		e.t.Fatalf("%d events after position %d (%v), want at least %d", n, progress, rows.Err(), atLeast)
	}
	return want
}

// hasTagKey reports whether tags hold the tag key, alone or with a value.
func hasTagKey(tags []string, key string) bool {
	for _, tag := range tags {
		if tag == key || strings.HasPrefix(tag, key+"=") {
			return true
		}
	}
	return false
}

// checkOnce reads topic whole and fails the test unless it holds each of
// ids once and nothing else.
func (e *env) checkOnce(topic string, ids []string) {
	e.t.Helper()
	got := map[string]int{}
	for _, r := range e.readAll(topic) {
		got[header(r, "id")]++
	}
	var bad []string
	for _, id := range ids {
		if got[id] != 1 {
			bad = append(bad, fmt.Sprintf("%s %d times", id, got[id]))
		}
		delete(got, id)
	}
	for id, n := range got {
		bad = append(bad, fmt.Sprintf("%s %d times, want never", id, n))
	}
	if len(bad) > 0 {
		e.t.Errorf("%s: %d of %d events not once: %s", topic, len(bad), len(ids), strings.Join(bad[:min(len(bad), 20)], ", "))
	}
}
