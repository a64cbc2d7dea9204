package e2e

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cdc-relay/cdc-relay/report"
)

// The operator's console (/ui) in a real browser, headless Chromium,
// against a relay with parked, waiting and paused events: each page shows
// the relay's numbers, and each action done through a page changes the
// status table and Kafka as `cdc-relay failed` and `cdc-relay pause`
// would.

// updateScreenshots makes TestConsole write docs/console/*.png.
var updateScreenshots = flag.Bool("update-screenshots", false, "TestConsole writes its screenshots of each page to docs/console/")

// consoleToken is the relay's admin token in these tests.
const consoleToken = "t0ken-for-the-console-tests"

// browser starts headless Chromium for t, with a new empty profile and no
// connection of its own (this machine's network may be closed). Without
// chromium it skips, unless CI is set: CI installs it (scripts/deps.sh
// chromium).
func browser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("chromium is not installed (CI is set): run scripts/deps.sh chromium")
		}
		t.Skip("chromium is not installed: scripts/deps.sh chromium (Debian's package) installs it; CI runs this test")
	}
	alloc, cancel := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1100, 900),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true))
	t.Cleanup(cancel)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	t.Cleanup(cancelCtx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 4*time.Minute)
	t.Cleanup(cancelTimeout)
	return ctx
}

// consoleEnv is a relay with an admin token whose status table holds, in
// topics that are the test's own:
//   - later: DEAD events "a1" of key a and "c1" of key c (their topic did
//     not exist, and --max-attempts is 1; now it does), each with a WAITING
//     event behind it ("a2", "c2");
//   - "bad topic!*": DEAD "b1" of key b (to be retried to the topic fixed)
//     and DEAD "d1" of key d. (A later event of a DEAD row's key whose
//     topic is illegal too is DEAD at once, not WAITING.)
//
// Every event's payload holds HTML.
type consoleEnv struct {
	*env
	relay               *relayProc
	later, fixed, pause string // topics
	ids                 map[string]int64
}

func newConsoleEnv(t *testing.T) *consoleEnv {
	e := newEnv(t)
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(consoleToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &consoleEnv{env: e, later: e.topic("later"), fixed: e.topic("fixed"), pause: e.topic("held"), ids: map[string]int64{}}
	e.createTopic(c.fixed, nil)
	e.createTopic(c.pause, nil)
	c.relay = e.startRelay("--admin-token-file", file, "--kafka-create-topics=false", "--max-attempts", "1")
	c.insert("later", "a", "a1", "")
	c.insert("order", "b", "b1", "bad topic!*")
	c.insert("later", "c", "c1", "")
	c.insert("order", "d", "d1", "bad topic!*")
	e.waitFor("a1, c1, b1 and d1 DEAD", 60*time.Second, func() bool { return e.statusCount("DEAD") == 4 })
	c.insert("later", "a", "a2", "")
	c.insert("later", "c", "c2", "")
	e.waitFor("a2 and c2 WAITING", 60*time.Second, func() bool { return e.statusCount("WAITING") == 2 })
	rows, err := e.conn.Query(context.Background(), "SELECT id, (convert_from(record_value, 'UTF8')::jsonb->>'n') FROM outbox_delivery")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		var n string
		if err := rows.Scan(&id, &n); err != nil {
			t.Fatal(err)
		}
		c.ids[n] = id
	}
	if rows.Err() != nil || len(c.ids) != 6 {
		t.Fatalf("status rows %v, %v; want 6", c.ids, rows.Err())
	}
	e.createTopic(c.later, nil)
	return c
}

// insert commits an event of aggregate agg and key with value {"n": n,
// "note": HTML}, for topic when it is set.
func (c *consoleEnv) insert(agg, key, n, topic string) {
	c.t.Helper()
	value := fmt.Sprintf(`{"n": %q, "note": "<img src=x onerror=alert(1)>"}`, n)
	if topic == "" {
		insert(c.t, c.conn, agg, key, "E", value)
		return
	}
	mustExec(c.t, c.conn, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, topic, payload) VALUES ($1, $2, 'E', $3, $4)`, agg, key, topic, value)
}

// rowState is the state of the status row of event n, "" when it is gone,
// and whether an operator skipped it.
func (c *consoleEnv) rowState(n string) (string, bool) {
	c.t.Helper()
	var st string
	var skipped bool
	err := c.conn.QueryRow(context.Background(), "SELECT status, skipped_at IS NOT NULL FROM outbox_delivery WHERE id = $1", c.ids[n]).Scan(&st, &skipped)
	if err != nil {
		return "", false
	}
	return st, skipped
}

// values are the "n" of the records of topic, in offset order of one
// partition per key.
func (c *consoleEnv) values(topic string, n int) []string {
	c.t.Helper()
	var out []string
	for _, r := range c.readN(topic, n, 60*time.Second) {
		var v struct{ N string }
		if err := json.Unmarshal(r.Value, &v); err != nil {
			c.t.Fatalf("record of %s: %v", topic, err)
		}
		out = append(out, v.N)
	}
	return out
}

// page opens path and returns the text of the element sel.
func (c *consoleEnv) page(ctx context.Context, path, sel string) string {
	c.t.Helper()
	resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(c.relay.endpoint()+path))
	if err != nil {
		c.t.Fatalf("open %s: %v", path, err)
	}
	if resp.Status != http.StatusOK {
		c.t.Fatalf("open %s: %d", path, resp.Status)
	}
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		c.t.Fatalf("%s: %s: %v", path, sel, err)
	}
	return text
}

// click clicks the element sel, waits for the page it loads, and returns
// its status code and the text of the element then.
func (c *consoleEnv) click(ctx context.Context, sel, then string) (int64, string) {
	c.t.Helper()
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(sel)))
	if err != nil {
		c.t.Fatalf("click %s: %v", sel, err)
	}
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(then)))
	if err != nil {
		c.t.Fatalf("after clicking %s: %s: %v", sel, then, err)
	}
	return resp.Status, text
}

// screenshot writes the page's screenshot to docs/console/name.png with
// -update-screenshots.
func (c *consoleEnv) screenshot(ctx context.Context, name string) {
	c.t.Helper()
	if !*updateScreenshots {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		c.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join("..", "docs", "console", name+".png"), png, 0o644); err != nil {
		c.t.Fatal(err)
	}
}

// TestConsole: the console's pages and actions in headless Chromium
// against a relay with parked, waiting and paused events.
func TestConsole(t *testing.T) {
	parallel(t)
	if kind := brokerKind(); kind != "kfake" {
		// Its subject is the admin server's pages, not the broker: CI
		// runs it once, on kfake (KFAKE_TESTS), off the Apache step.
		t.Skipf("tests the relay's console, run on kfake; this run uses the %s broker", kind)
	}
	ctx := browser(t)
	c := newConsoleEnv(t)
	c.signIn(ctx)
	c.overviewAndList(ctx)
	c.purgeAndSkip(ctx)
	c.retries(ctx)
	c.pauseAndResume(ctx)
	c.crossSite(ctx)
	c.insert("fixed", "z", "z1", "") // delivered by the stream: a commit-to-ack time
	c.waitFor("the overview draws the relay's last hour", 30*time.Second, func() bool {
		c.page(ctx, "/ui", "#hour")
		n, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll("#rate polyline, #ack polyline"), chromedp.AtLeast(0)))
		return err == nil && len(n) == 2
	})
	c.screenshot(ctx, "overview-hour")
	c.page(ctx, "/ui", "#role")
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS("nav form button"))); err != nil {
		t.Fatalf("sign out: %v", err)
	}
	if c.page(ctx, "/ui/events", "h1"); !strings.HasSuffix(c.location(ctx), "/ui/login") {
		t.Fatalf("after signing out /ui/events is %s, want the sign-in page", c.location(ctx))
	}
}

// location is the browser's address.
func (c *consoleEnv) location(ctx context.Context) string {
	c.t.Helper()
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		c.t.Fatal(err)
	}
	return loc
}

// signIn: without the token the console sends the browser to sign in,
// refuses a wrong token, and takes the right one.
func (c *consoleEnv) signIn(ctx context.Context) {
	c.t.Helper()
	if h1 := c.page(ctx, "/ui", "h1"); h1 != "Sign in" || !strings.HasSuffix(c.location(ctx), "/ui/login") {
		c.t.Fatalf("/ui without the token shows %q at %s, want the sign-in page", h1, c.location(ctx))
	}
	c.screenshot(ctx, "login")
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#token"), "not-"+consoleToken)); err != nil {
		c.t.Fatal(err)
	}
	if code, text := c.click(ctx, "main form button", "main"); code != http.StatusUnauthorized || !strings.Contains(text, "not the relay's token") {
		c.t.Fatalf("a wrong token: %d %q", code, text)
	}
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#token"), consoleToken)); err != nil {
		c.t.Fatal(err)
	}
	if code, role := c.click(ctx, "main form button", "#role"); code != http.StatusOK || !strings.HasPrefix(role, "leader") {
		c.t.Fatalf("signed in: %d, role %q", code, role)
	}
	if strings.Contains(c.relay.Log(), consoleToken) {
		c.t.Fatalf("the relay's log holds the token:\n%s", c.relay.Log())
	}
}

// overviewAndList: the overview's numbers are the status table's, and the
// list filters by state, key and time.
func (c *consoleEnv) overviewAndList(ctx context.Context) {
	c.t.Helper()
	var st report.Status
	defer func() {
		if c.t.Failed() {
			c.t.Logf("the last /status: %+v", st)
		}
	}()
	c.waitFor("/status counts the held events", 30*time.Second, func() bool {
		st = c.relay.status()
		return st.Failed == 0 && st.Dead == 4 && len(st.Topics) == 2
	})
	if parked := c.page(ctx, "/ui", "#parked"); !strings.HasPrefix(parked, "0 FAILED, 4 DEAD") {
		c.t.Fatalf("overview: parked %q, want 0 FAILED, 4 DEAD", parked)
	}
	held := c.page(ctx, "/ui", "#held-topics tbody")
	for _, want := range []string{c.later + "\t0\t2\t2\t0", "bad topic!*\t0\t2\t0\t0"} {
		if !strings.Contains(held, want) {
			c.t.Errorf("overview's held topics\n%s\nlack the line %q", held, want)
		}
	}
	c.screenshot(ctx, "overview")
	if *updateScreenshots { // and as a phone shows it
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844)); err != nil {
			c.t.Fatal(err)
		}
		c.page(ctx, "/ui", "#parked")
		c.screenshot(ctx, "overview-phone")
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(1100, 900)); err != nil {
			c.t.Fatal(err)
		}
	}
	for _, tt := range []struct{ query, want string }{
		{"state=DEAD", "4 events."},
		{"state=WAITING", "2 events."},
		{"state=any&key=c", "2 events"},
		{"state=any&topic=" + c.later, "4 events."},
		{"state=any&from=" + time.Now().Add(time.Hour).UTC().Format("2006-01-02+15:04"), "0 events"},
	} {
		if got := c.page(ctx, "/ui/events?"+tt.query, "#count"); !strings.HasPrefix(got, tt.want) {
			c.t.Errorf("events?%s: %q, want %q", tt.query, got, tt.want)
		}
	}
	c.page(ctx, "/ui/events?state=any", "#events")
	c.screenshot(ctx, "events")
}

// act opens event n's page, starts action (typing topic first when set),
// checks the confirmation page's count, confirms, and returns the message.
func (c *consoleEnv) act(ctx context.Context, n, action, topic, releases string) string {
	c.t.Helper()
	c.page(ctx, fmt.Sprintf("/ui/events/%d", c.ids[n]), "#state")
	if topic != "" {
		if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#new-topic"), topic)); err != nil {
			c.t.Fatal(err)
		}
	}
	sel := fmt.Sprintf(`form:has(input[name="action"][value=%q]) button`, action)
	if code, got := c.click(ctx, sel, "#releases"); code != http.StatusOK || !strings.Contains(got, releases) {
		c.t.Fatalf("confirm %s of %s: %d %q, want %q", action, n, code, got, releases)
	}
	if action == "skip" {
		c.screenshot(ctx, "confirm")
	}
	code, msg := c.click(ctx, "#confirm", "#message")
	if code != http.StatusOK {
		c.t.Fatalf("%s %s: %d %s", action, n, code, msg)
	}
	return msg
}

// purgeAndSkip: the payload shows as text; purge deletes d1; skip gives
// up c1 and releases c2.
func (c *consoleEnv) purgeAndSkip(ctx context.Context) {
	c.t.Helper()
	if payload := c.page(ctx, fmt.Sprintf("/ui/events/%d", c.ids["d1"]), "#payload"); !strings.Contains(payload, `"note": "<img src=x onerror=alert(1)>"`) {
		c.t.Fatalf("d1's payload shows as %q, want its JSON as text", payload)
	}
	if n, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll("#payload *"), chromedp.AtLeast(0))); err != nil || len(n) != 0 {
		c.t.Fatalf("d1's payload made %d elements (%v), want none", len(n), err)
	}
	c.screenshot(ctx, "event")
	if msg := c.act(ctx, "d1", "purge", "", "releases 0 WAITING events"); !strings.Contains(msg, "deleted") {
		c.t.Fatalf("purge d1: %q", msg)
	}
	if st, _ := c.rowState("d1"); st != "" {
		c.t.Fatalf("purged d1 is %s", st)
	}
	if msg := c.act(ctx, "c1", "skip", "", "releases 1 WAITING event"); !strings.Contains(msg, "Released: 1") {
		c.t.Fatalf("skip c1: %q", msg)
	}
	if st, skipped := c.rowState("c1"); st != "DEAD" || !skipped {
		c.t.Fatalf("skipped c1 is %s, skipped %v", st, skipped)
	}
	c.waitFor("c2 released and delivered", 30*time.Second, func() bool { st, _ := c.rowState("c2"); return st == "DELIVERED" })
}

// retries: b1 retried to the topic fixed reaches it; a1 retried reaches
// later, and a2 follows it.
func (c *consoleEnv) retries(ctx context.Context) {
	c.t.Helper()
	if msg := c.act(ctx, "b1", "retry-topic", c.fixed, "releases 0 WAITING events"); !strings.Contains(msg, "to topic "+c.fixed) {
		c.t.Fatalf("retry b1 to %s: %q", c.fixed, msg)
	}
	if got := c.values(c.fixed, 1); len(got) != 1 || got[0] != "b1" {
		c.t.Fatalf("%s holds %v, want b1", c.fixed, got)
	}
	if msg := c.act(ctx, "a1", "retry", "", "releases no event now"); !strings.Contains(msg, "due now") {
		c.t.Fatalf("retry a1: %q", msg)
	}
	var a []string // key a's, in the order of their partition
	for _, v := range c.values(c.later, 3) {
		if strings.HasPrefix(v, "a") {
			a = append(a, v)
		}
	}
	if strings.Join(a, " ") != "a1 a2" {
		c.t.Fatalf("%s holds %v of key a, want a1 a2", c.later, a)
	}
	c.waitFor("a1, a2, b1 and c2 DELIVERED", 30*time.Second, func() bool { return c.statusCount("DELIVERED") == 4 })
}

// pauseAndResume: a topic paused on the topics page holds its events
// PAUSED; resumed there, they reach Kafka.
func (c *consoleEnv) pauseAndResume(ctx context.Context) {
	c.t.Helper()
	c.page(ctx, "/ui/topics", "h1")
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#pause-topic"), c.pause)); err != nil {
		c.t.Fatal(err)
	}
	if code, msg := c.click(ctx, "form.stack button", "#message"); code != http.StatusOK || !strings.Contains(msg, "held from now on") {
		c.t.Fatalf("pause %s: %d %q", c.pause, code, msg)
	}
	c.insert("held", "p", "p1", "")
	c.waitFor("p1 PAUSED", 30*time.Second, func() bool { st, _ := c.rowStateOf("p1"); return st == "PAUSED" })
	c.waitFor("/status counts p1", 30*time.Second, func() bool {
		for _, tp := range c.relay.status().Topics {
			if tp.Topic == c.pause && tp.Paused == 1 {
				return true
			}
		}
		return false
	})
	if row := c.page(ctx, "/ui/topics", "#topics"); !strings.Contains(row, c.pause+"\tpaused\t1 (0 FAILED, 0 DEAD, 0 WAITING, 1 PAUSED)") {
		c.t.Fatalf("topics page:\n%s\nwant %s paused with 1 PAUSED", row, c.pause)
	}
	c.screenshot(ctx, "topics")
	sel := fmt.Sprintf(`button[aria-label="Resume kafka's topic %s"]`, c.pause)
	if code, msg := c.click(ctx, sel, "#message"); code != http.StatusOK || !strings.Contains(msg, "delivered again") {
		c.t.Fatalf("resume %s: %d %q", c.pause, code, msg)
	}
	if got := c.values(c.pause, 1); len(got) != 1 || got[0] != "p1" {
		c.t.Fatalf("%s holds %v, want p1", c.pause, got)
	}
}

// rowStateOf is rowState of an event inserted after newConsoleEnv.
func (c *consoleEnv) rowStateOf(n string) (string, bool) {
	if _, ok := c.ids[n]; !ok {
		var id int64
		if err := c.conn.QueryRow(context.Background(), "SELECT id FROM outbox_delivery WHERE (convert_from(record_value, 'UTF8')::jsonb->>'n') = $1", n).Scan(&id); err != nil {
			return "", false
		}
		c.ids[n] = id
	}
	return c.rowState(n)
}

// crossSite: a form of another site that posts to the console, in the
// signed-in browser, is refused and pauses nothing.
func (c *consoleEnv) crossSite(ctx context.Context) {
	c.t.Helper()
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<form method="post" action="%s/ui/topics/pause"><input type="hidden" name="topic" value="%s">`+
			`<input type="hidden" name="csrf" value="guess"><button id="go">Win a prize</button></form>`, c.relay.endpoint(), c.fixed)
	}))
	defer evil.Close()
	if _, err := chromedp.Run(ctx, chromedp.NavigateResponse(evil.URL)); err != nil {
		c.t.Fatal(err)
	}
	if code, msg := c.click(ctx, "#go", "#message"); code != http.StatusForbidden || !strings.Contains(msg, "another site") {
		c.t.Fatalf("a cross-site form: %d %q, want 403", code, msg)
	}
	if c.relay.pausedOnStatus(c.fixed) {
		c.t.Fatalf("a cross-site form paused %s", c.fixed)
	}
}
