package e2e

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cdc-relay/cdc-relay/internal/relayproc"
)

// backfillArgs are the arguments of `cdc-relay backfill` for the test's
// database, broker and topic template, then extra.
func (e *env) backfillArgs(extra ...string) []string {
	return append([]string{"backfill",
		"--postgres-url", e.url,
		"--kafka-brokers", strings.Join(e.brokers, ","),
		"--topic-template", e.prefix + ".{aggregate_type}",
	}, extra...)
}

// appWrites inserts rows of aggregate type agg, one transaction each, as
// an application does, until the returned function is called; that
// returns how many it inserted. Each row's payload has its number (n) and
// the time of its insert (at, Unix nanoseconds).
func (e *env) appWrites(agg string) (stop func() int) {
	conn := mustConnect(e.t, e.url)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	n := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			if _, err := conn.Exec(ctx, "INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ($1, 'live', 'Live', $2)",
				agg, fmt.Sprintf(`{"n": %d, "at": %d}`, n, time.Now().UnixNano())); err == nil {
				n++
			}
			time.Sleep(2 * time.Millisecond) // a few hundred a second
		}
	}()
	return func() int {
		cancel()
		wg.Wait()
		conn.Close(context.Background())
		return n
	}
}

// summaryCounts are the rows published and selected in a backfill's
// summary.
var summaryCounts = regexp.MustCompile(`: ([\d,]+) rows published of ([\d,]+) selected`)

// atoi is the number n, with or without thousands' commas.
func atoi(t *testing.T, n string) int {
	t.Helper()
	v, err := strconv.Atoi(strings.ReplaceAll(n, ",", ""))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// resumeLine is the command a stopped backfill prints.
var resumeLine = regexp.MustCompile(`(?m)^  (cdc-relay backfill .* --after .*)$`)

// TestBackfillBesideALiveRelay: on a relay streaming an application's
// writes, `backfill --where "created_at > now() - interval '1 hour'"`
// (counted first by a dry run, which needs no Kafka) publishes every row
// the predicate selects with the backfill header, and none it does not;
// while it runs, the relay's /status, its metrics and `cdc-relay status`
// show it, and a second backfill of the table is refused, naming it;
// SIGINT stops the first, which prints the command that resumes it, and
// that command publishes the rest, no more rows than it selected though
// the application keeps writing rows that match (random keys, some ahead
// of its place). The live stream delivers every row the application
// wrote meanwhile.
func TestBackfillBesideALiveRelay(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	const selected, old = 2000, 500
	want := e.seedRecentAndOld(selected, old)
	relay := e.startRelay()
	stopApp := e.appWrites("live")
	where := "created_at > now() - interval '1 hour'"
	e.checkDryRun(where)

	// The server trusts the test's connections: passwords in the URL are
	// read and not needed, and the resume command must print none.
	args := e.backfillArgs("--where", where, "--rate", "200", "--batch", "50")
	args[2] = strings.Replace(e.url, "postgres@", "postgres:s3cret@", 1) + "&password=s3cret&sslpassword=s3cret"
	first, err := relayproc.Start(relayBin, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(first.Kill)
	topic := e.topic("order")
	e.waitFor("the backfill published its first batches", 60*time.Second, func() bool {
		if !first.Running() {
			t.Fatalf("backfill exited early: %v\n%s", first.Err(), first.Log())
		}
		return len(e.readAll(topic)) >= selected+old+100 // the stream's, then the backfill's
	})
	e.checkShown(relay, selected)
	e.checkSecondRefused(first.Pid())
	resumed, liveBefore := e.stopAndResume(relay, first)
	live := stopApp()
	e.checkResumedBounded(resumed, liveBefore)
	e.waitFor("the relay's /status shows no backfill", 30*time.Second, func() bool { return len(relay.status().Backfills) == 0 })

	e.checkEverySelectedArrived(topic, want)
	if liveRecs := e.readN(e.topic("live"), live, 60*time.Second); len(liveRecs) < live {
		t.Errorf("%d live records, want %d", len(liveRecs), live)
	}
	relay.stop(30 * time.Second)
}

// seedRecentAndOld writes selected rows of ten minutes ago and old rows of
// two hours ago, and returns the ids of the recent ones.
func (e *env) seedRecentAndOld(selected, old int) []string {
	t := e.t
	t.Helper()
	mustExec(t, e.conn, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, created_at)
		SELECT 'order', 'k' || (i % 50), 'Placed', jsonb_build_object('i', i), now() - interval '10 minutes' FROM generate_series(1, $1::int) i`, selected)
	mustExec(t, e.conn, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, created_at)
		SELECT 'order', 'k', 'Old', jsonb_build_object('old', i), now() - interval '2 hours' FROM generate_series(1, $1::int) i`, old)
	var want []string
	rows, err := e.conn.Query(context.Background(), "SELECT id::text FROM outbox WHERE created_at > now() - interval '1 hour'")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		want = append(want, id)
	}
	if rows.Err() != nil || len(want) != selected {
		t.Fatalf("%d selected rows, %v", len(want), rows.Err())
	}
	return want
}

// checkDryRun checks that a dry run, without Kafka, counts the rows where
// selects.
func (e *env) checkDryRun(where string) {
	e.t.Helper()
	out, err := exec.Command(relayBin, "backfill", "--postgres-url", e.url, "--where", where, "--dry-run").CombinedOutput()
	if err != nil || !regexp.MustCompile(`dry run: 2,\d{3} row\(s\) of public.outbox selected, key \(id\) from \S+ to \S+`).Match(out) {
		e.t.Errorf("a dry run without Kafka (%v) does not count the rows:\n%s", err, out)
	}
}

// checkShown checks that the relay's /status, its metrics and `cdc-relay
// status` show the running backfill.
func (e *env) checkShown(relay *relayProc, selected int) {
	e.t.Helper()
	e.waitFor("the relay's /status and metrics show the backfill", 30*time.Second, func() bool {
		st := relay.status()
		_, families := relay.scrape()
		return len(st.Backfills) == 1 && st.Backfills[0].Table == "public.outbox" && st.Backfills[0].RowsPublished > 0 &&
			st.Backfills[0].RowsSelected >= int64(selected) && value(families, "cdc_relay_backfill_rows_total", "table", "public.outbox") > 0
	})
	out, err := exec.Command(relayBin, "status", "--metrics-addr", strings.TrimPrefix(relay.endpoint(), "http://")).CombinedOutput()
	if !strings.Contains(string(out), "backfill    public.outbox: ") {
		e.t.Errorf("cdc-relay status (%v) does not show the backfill:\n%s", err, out)
	}
}

// checkSecondRefused checks that a second backfill of the table is
// refused, naming the first's process.
func (e *env) checkSecondRefused(pid int) {
	e.t.Helper()
	out, err := exec.Command(relayBin, e.backfillArgs("--where", "true")...).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "another backfill of the table is running") ||
		!strings.Contains(string(out), fmt.Sprintf("cdc-relay backfill, pid %d", pid)) {
		e.t.Errorf("a second backfill: %v, want a refusal naming the first's process %d:\n%s", err, pid, out)
	}
}

// stopAndResume stops the backfill with SIGINT once it runs and has
// published some of its rows but not all, runs the command it printed to
// resume (which must end though the application keeps writing rows that
// match), and returns what that printed and how many live rows were
// committed before it started.
func (e *env) stopAndResume(relay *relayProc, first *relayproc.Proc) (string, int) {
	t := e.t
	t.Helper()
	e.waitFor("the backfill runs, part published", 30*time.Second, func() bool {
		if !first.Running() {
			t.Fatalf("the backfill ended before SIGINT: %v\n%s", first.Err(), first.Log())
		}
		st := relay.status()
		return len(st.Backfills) == 1 && st.Backfills[0].RowsPublished > 0 && st.Backfills[0].RowsPublished < st.Backfills[0].RowsSelected
	})
	if err := syscall.Kill(first.Pid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-first.Done():
	case <-time.After(30 * time.Second):
		t.Fatalf("the backfill did not stop within 30 s of SIGINT:\n%s", first.Log())
	}
	m := resumeLine.FindStringSubmatch(first.Log())
	if m == nil || first.Err() == nil {
		t.Fatalf("the stopped backfill (%v) printed no command to resume:\n%s", first.Err(), first.Log())
	}
	if ee := (*exec.ExitError)(nil); !errors.As(first.Err(), &ee) || ee.ExitCode() != 130 {
		t.Errorf("the backfill stopped by SIGINT exited with %v, want exit status 130", first.Err())
	}
	if strings.Contains(m[1], "password=") || strings.Contains(m[1], "s3cret") {
		t.Errorf("the resume command keeps a password: %s", m[1])
	}
	t.Logf("the stopped backfill said:\n%s", first.Log())
	// The server releases the stopped backfill's lock as its session ends,
	// soon after the process.
	var (
		resumed    []byte
		err        error
		liveBefore int
	)
	e.waitFor("the resumed backfill ran", 60*time.Second, func() bool {
		if err := e.conn.QueryRow(context.Background(), "SELECT count(*) FROM outbox WHERE aggregate_type = 'live'").Scan(&liveBefore); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		resumed, err = exec.CommandContext(ctx, "sh", "-c", relayBin+strings.TrimPrefix(m[1], "cdc-relay")).CombinedOutput()
		if ctx.Err() != nil {
			t.Fatalf("the resumed backfill did not end within 2 minutes while the application writes rows that match:\n%s", resumed)
		}
		return !strings.Contains(string(resumed), "another backfill of the table is running")
	})
	if err != nil {
		t.Fatalf("%s: %v\n%s", m[1], err, resumed)
	}
	t.Logf("the resumed backfill said:\n%s", resumed)
	return string(resumed), liveBefore
}

// checkResumedBounded checks that the resumed backfill published all it
// selected, and, of the application's live rows (which match, with random
// keys ahead of its place), no more than were committed before it started
// (liveBefore): the backfills' header is on no live row committed later.
func (e *env) checkResumedBounded(resumed string, liveBefore int) {
	e.t.Helper()
	if m := summaryCounts.FindStringSubmatch(resumed); m == nil || atoi(e.t, m[1]) != atoi(e.t, m[2]) {
		e.t.Errorf("the resumed backfill did not publish the rows it selected (%q)", m)
	}
	backfilled := map[string]bool{}
	for _, r := range e.readAll(e.topic("live")) {
		if header(r, "cdc-relay-backfill") != "" {
			backfilled[header(r, "id")] = true
		}
	}
	if len(backfilled) > liveBefore {
		e.t.Errorf("%d live rows arrived from the backfills, more than the %d committed before the resumed one started", len(backfilled), liveBefore)
	}
	e.t.Logf("%d of the %d live rows committed before the resumed backfill started arrived from the backfills", len(backfilled), liveBefore)
}

// checkEverySelectedArrived checks that every selected row arrived on
// topic with the backfill's header, at least once, and no other row of
// the topic (the old ones) did.
func (e *env) checkEverySelectedArrived(topic string, want []string) {
	e.t.Helper()
	backfilled := map[string]int{}
	for _, r := range e.readAll(topic) {
		if header(r, "cdc-relay-backfill") != "" {
			backfilled[header(r, "id")]++
		}
	}
	missing := 0
	for _, id := range want {
		if backfilled[id] == 0 {
			missing++
		}
	}
	if missing > 0 || len(backfilled) != len(want) {
		e.t.Errorf("%d of the %d selected rows arrived from the backfill (%d missing); %d distinct ids had its header", len(want)-missing, len(want), missing, len(backfilled))
	}
}
