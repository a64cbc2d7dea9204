package admin

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cdc-relay/cdc-relay/report"
	"github.com/cdc-relay/cdc-relay/status"
)

// consoleReq is one request to the admin server (the console, the API):
// no redirect followed.
type consoleReq struct {
	method, path string
	form         url.Values
	cookie       *http.Cookie
	header       map[string]string
}

func (r consoleReq) do(t *testing.T, ts *httptest.Server) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if r.form != nil {
		body = strings.NewReader(r.form.Encode())
	}
	req, err := http.NewRequest(r.method, ts.URL+r.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if r.form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if r.cookie != nil {
		req.AddCookie(r.cookie)
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	client := *ts.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrfOf is the CSRF token of the forms of the page at path.
func csrfOf(t *testing.T, ts *httptest.Server, path string, cookie *http.Cookie) string {
	t.Helper()
	resp, body := consoleReq{method: "GET", path: path, cookie: cookie}.do(t, ts)
	m := csrfField.FindStringSubmatch(body)
	if resp.StatusCode != http.StatusOK || m == nil {
		t.Fatalf("GET %s: %d, no CSRF token in %s", path, resp.StatusCode, body)
	}
	return m[1]
}

// signIn signs in to the console with token and returns the cookie.
func signIn(t *testing.T, ts *httptest.Server, token string) *http.Cookie {
	t.Helper()
	csrf := csrfOf(t, ts, "/ui/login", nil)
	resp, body := consoleReq{method: "POST", path: "/ui/login", form: url.Values{"csrf": {csrf}, "token": {token}}}.do(t, ts)
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Fatalf("sign in: %d %v %s", resp.StatusCode, resp.Cookies(), body)
	}
	return resp.Cookies()[0]
}

// TestConsoleRule: the console's pages need the token's cookie when the
// relay has a token (a GET goes to the sign-in page, a POST is a 401), a
// loopback listener and host when it has none.
func TestConsoleRule(t *testing.T) {
	tests := []struct {
		name     string
		token    string
		loopback bool
		req      consoleReq
		want     int
	}{
		{"token, no cookie: sign in", "s3cret", true, consoleReq{method: "GET", path: "/ui"}, http.StatusSeeOther},
		{"token, events without cookie", "s3cret", false, consoleReq{method: "GET", path: "/ui/events"}, http.StatusSeeOther},
		{"token, a forged cookie", "s3cret", true, consoleReq{method: "GET", path: "/ui",
			cookie: &http.Cookie{Name: sessionCookie, Value: "s3cret"}}, http.StatusSeeOther},
		{"token, POST without cookie", "s3cret", true, consoleReq{method: "POST", path: "/ui/topics/pause",
			form: url.Values{"topic": {"orders"}}}, http.StatusUnauthorized},
		{"token, the API's bearer header", "s3cret", false, consoleReq{method: "GET", path: "/ui",
			header: map[string]string{"Authorization": "Bearer s3cret"}}, http.StatusOK},
		{"token, a wrong bearer header", "s3cret", false, consoleReq{method: "GET", path: "/ui",
			header: map[string]string{"Authorization": "Bearer s3cre"}}, http.StatusSeeOther},
		{"no token, loopback", "", true, consoleReq{method: "GET", path: "/ui"}, http.StatusOK},
		{"no token, not loopback", "", false, consoleReq{method: "GET", path: "/ui"}, http.StatusForbidden},
		{"no token, not loopback, topics", "", false, consoleReq{method: "GET", path: "/ui/topics"}, http.StatusForbidden},
		{"the sign-in page needs nothing", "s3cret", false, consoleReq{method: "GET", path: "/ui/login"}, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeRelay{st: report.Status{Ready: true}}
			ts := serve(t, f, tt.token, tt.loopback)
			resp, body := tt.req.do(t, ts)
			if resp.StatusCode != tt.want {
				t.Fatalf("%s %s: %d %s, want %d", tt.req.method, tt.req.path, resp.StatusCode, body, tt.want)
			}
			if loc := resp.Header.Get("Location"); tt.want == http.StatusSeeOther && loc != "/ui/login" {
				t.Errorf("redirected to %q, want /ui/login", loc)
			}
			if f.topics["orders"] {
				t.Error("the refused POST paused the topic")
			}
			if csp := resp.Header.Get("Content-Security-Policy"); tt.want != http.StatusSeeOther && !strings.Contains(csp, "default-src 'none'") {
				t.Errorf("Content-Security-Policy %q", csp)
			}
		})
	}
}

// TestConsoleSignIn: a wrong token is refused; the right one sets an
// HttpOnly, SameSite=Strict cookie that is not the token, which then
// opens the pages; signing out clears it.
func TestConsoleSignIn(t *testing.T) {
	const token = "s3cret-token"
	ts := serve(t, &fakeRelay{st: report.Status{Ready: true, Role: report.RoleLeader}}, token, false)
	csrf := csrfOf(t, ts, "/ui/login", nil)
	resp, body := consoleReq{method: "POST", path: "/ui/login", form: url.Values{"csrf": {csrf}, "token": {"s3cret-toke"}}}.do(t, ts)
	if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 || !strings.Contains(body, "not the relay's token") {
		t.Fatalf("a wrong token: %d %v %s", resp.StatusCode, resp.Cookies(), body)
	}
	resp, _ = consoleReq{method: "POST", path: "/ui/login", form: url.Values{"token": {token}}}.do(t, ts)
	if resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
		t.Fatalf("sign-in without its CSRF token: %d %v, want 403 and no cookie", resp.StatusCode, resp.Cookies())
	}
	resp, _ = consoleReq{method: "POST", path: "/ui/login", form: url.Values{"csrf": {csrf}, "token": {token}},
		header: map[string]string{"Origin": "https://evil.example"}}.do(t, ts)
	if resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
		t.Fatalf("sign-in from another origin: %d %v, want 403 and no cookie", resp.StatusCode, resp.Cookies())
	}
	ck := signIn(t, ts, token)
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/ui" || strings.Contains(ck.Value, token) {
		t.Fatalf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/ui, not holding the token", ck)
	}
	resp, body = consoleReq{method: "GET", path: "/ui", cookie: ck}.do(t, ts)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `id="role">leader`) {
		t.Fatalf("overview signed in: %d %s", resp.StatusCode, body)
	}
	resp, _ = consoleReq{method: "POST", path: "/ui/logout", cookie: ck, form: url.Values{"csrf": {csrfOf(t, ts, "/ui", ck)}}}.do(t, ts)
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 || resp.Cookies()[0].MaxAge >= 0 {
		t.Fatalf("sign out: %d %v, want the cookie cleared", resp.StatusCode, resp.Cookies())
	}
}

// TestConsoleRefusesCrossSitePosts: a form that changes something is
// refused without the page's CSRF token, with another's, or from another
// origin, with a token and on loopback without one.
func TestConsoleRefusesCrossSitePosts(t *testing.T) {
	for _, token := range []string{"s3cret", ""} {
		f := &fakeRelay{st: report.Status{Ready: true}}
		ts := serve(t, f, token, true)
		var ck *http.Cookie
		if token != "" {
			ck = signIn(t, ts, token)
		}
		csrf := csrfOf(t, ts, "/ui/topics", ck)
		other := serve(t, f, token, true) // another process: another secret
		var otherCk *http.Cookie
		if token != "" {
			otherCk = signIn(t, other, token)
		}
		stale := csrfOf(t, other, "/ui/topics", otherCk)
		for _, tt := range []struct {
			name   string
			csrf   string
			header map[string]string
		}{
			{"no CSRF token", "", nil},
			{"a wrong CSRF token", csrf[:len(csrf)-2] + "xx", nil},
			{"another process's CSRF token", stale, nil},
			{"a foreign Origin", csrf, map[string]string{"Origin": "http://evil.example"}},
			{"a cross-site fetch", csrf, map[string]string{"Sec-Fetch-Site": "cross-site"}},
			{"a same-site fetch", csrf, map[string]string{"Sec-Fetch-Site": "same-site"}},
		} {
			form := url.Values{"topic": {"orders"}, "publisher": {"kafka"}}
			if tt.csrf != "" {
				form.Set("csrf", tt.csrf)
			}
			resp, body := consoleReq{method: "POST", path: "/ui/topics/pause", form: form, cookie: ck, header: tt.header}.do(t, ts)
			if resp.StatusCode != http.StatusForbidden || f.topics["orders"] {
				t.Errorf("token %q, %s: %d (paused: %v) %s; want 403, not paused", token, tt.name, resp.StatusCode, f.topics["orders"], body)
			}
		}
		form := url.Values{"topic": {"orders"}, "publisher": {"kafka"}, "csrf": {csrf}}
		resp, body := consoleReq{method: "POST", path: "/ui/topics/pause", form: form, cookie: ck,
			header: map[string]string{"Origin": ts.URL, "Sec-Fetch-Site": "same-origin"}}.do(t, ts)
		if resp.StatusCode != http.StatusOK || !f.topics["orders"] {
			t.Errorf("token %q, the page's own form: %d (paused: %v) %s", token, resp.StatusCode, f.topics["orders"], body)
		}
	}
}

// TestConsoleEscapes: what a database user chooses (topics, keys,
// payloads, errors, headers) is shown as text, never as HTML.
func TestConsoleEscapes(t *testing.T) {
	const evil = `<script>alert(1)</script>"><img src=x onerror=alert(2)>`
	f := &fakeRelay{
		st: report.Status{Ready: true, Role: report.RoleLeader, PausedTopics: []string{evil}, LastError: evil,
			Topics: []report.TopicHeld{{Topic: evil, Failed: 1}}, HeldTopics: 1,
			PublishersPaused: []report.PublisherTopic{{Publisher: "hooks", Topic: evil}}},
		rows: []status.Row{{ID: 7, Status: status.Failed, Topic: evil, Key: []byte(evil), Value: []byte(evil), LastError: evil}},
	}
	ts := serve(t, f, "", true)
	for _, path := range []string{"/ui", "/ui/topics", "/ui/events?state=any", "/ui/events?topic=" + url.QueryEscape(evil) + "&key=" + url.QueryEscape(evil)} {
		resp, body := consoleReq{method: "GET", path: path}.do(t, ts)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
		}
		if strings.Contains(body, "<script") || strings.Contains(body, "<img") {
			t.Errorf("GET %s shows a user's text as HTML:\n%s", path, body)
		}
		if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("GET %s does not show the text escaped:\n%s", path, body)
		}
	}
	// A key of bytes that are not UTF-8 shows as hex.
	if got := recordText([]byte{0xff, 0x00}); got != "0xff00" {
		t.Errorf("recordText of binary: %q", got)
	}
}

// TestConsoleOverviewHistory: the overview draws the relay's last hour:
// its rate and its mean commit-to-ack time, the hour ending at the right.
func TestConsoleOverviewHistory(t *testing.T) {
	end := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	f := &fakeRelay{st: report.Status{Ready: true}, history: []report.Point{
		{At: end.Add(-30 * time.Minute), Seconds: 10, Rate: 6, Acked: 60, MeanAckSeconds: 0.02},
		{At: end.Add(-20 * time.Minute), Seconds: 10},
		{At: end, Seconds: 10, Rate: 12, Acked: 120, MeanAckSeconds: 1.5},
	}}
	ts := serve(t, f, "", true)
	resp, body := consoleReq{method: "GET", path: "/ui"}.do(t, ts)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /ui: %d %s", resp.StatusCode, body)
	}
	for _, want := range []string{
		`<polyline points="300.0,40.0 400.0,78.0 600.0,2.0"`, "12.0/s now, at most 12.0/s", // the idle interval at 0
		`<polyline points="300.0,77.0 600.0,2.0"`, "1.5 s now, at most 1.5 s", // no mean where nothing was acked
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the overview lacks %q:\n%s", want, body)
		}
	}
	f.history = nil
	if _, body := (consoleReq{method: "GET", path: "/ui"}).do(t, ts); !strings.Contains(body, "No reading yet") {
		t.Errorf("the overview of a relay without history:\n%s", body)
	}
}

// TestConsoleEventActions: an event's page shows what a database user
// chose as text; the confirmation page counts the events a skip releases;
// the skip needs the page's CSRF token, and then skips as `cdc-relay
// failed skip` does; an id of another publisher's says whose it is.
func TestConsoleEventActions(t *testing.T) {
	const evil = `<script>alert(1)</script>`
	ctx, _, conn := pg.ConnectDB(t, 2*time.Minute,
		`INSERT INTO outbox_delivery (event_id, topic, record_key, record_value, status, attempts, last_error, publisher) VALUES
		  ('e-1', '`+evil+`', convert_to('`+evil+`', 'UTF8'), convert_to('{"x": "`+evil+`"}', 'UTF8'), 'DEAD', 5, '`+evil+`', 'kafka'),
		  ('e-2', '`+evil+`', convert_to('`+evil+`', 'UTF8'), NULL, 'WAITING', 0, 'waits', 'kafka')`)
	store := func(publisher string) *status.Store {
		return status.NewStore(conn, "public", "outbox_delivery", status.Publisher(publisher))
	}
	f := &fakeRelay{stores: map[string]*status.Store{status.KafkaPublisher: store(status.KafkaPublisher), "partner": store("partner")}}
	ts := serve(t, f, "", true)
	for _, path := range []string{"/ui/events/1", "/ui/events/1/confirm?action=retry-topic&topic=" + url.QueryEscape(evil)} {
		resp, body := consoleReq{method: "GET", path: path}.do(t, ts)
		if resp.StatusCode != http.StatusOK || strings.Contains(body, "<script") || !strings.Contains(body, "&lt;script&gt;") {
			t.Fatalf("GET %s: %d, a user's text as HTML or not shown:\n%s", path, resp.StatusCode, body)
		}
	}
	resp, body := consoleReq{method: "GET", path: "/ui/events/1/confirm?action=skip"}.do(t, ts)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "It releases 1 WAITING event of its key at once.") {
		t.Fatalf("confirm the skip: %d\n%s", resp.StatusCode, body)
	}
	csrf := csrfField.FindStringSubmatch(body)[1]
	skipped := func() bool {
		var at *time.Time
		if err := conn.QueryRow(ctx, "SELECT skipped_at FROM outbox_delivery WHERE id = 1").Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at != nil
	}
	if resp, _ := (consoleReq{method: "POST", path: "/ui/events/1/skip", form: url.Values{"publisher": {"kafka"}}}).do(t, ts); resp.StatusCode != http.StatusForbidden || skipped() {
		t.Fatalf("a skip without the CSRF token: %d, skipped %v; want 403, not skipped", resp.StatusCode, skipped())
	}
	resp, body = consoleReq{method: "POST", path: "/ui/events/1/skip", form: url.Values{"publisher": {"kafka"}, "csrf": {csrf}}}.do(t, ts)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "It was DEAD; it is DEAD now, skipped. Released: 1.") || !skipped() {
		t.Fatalf("the skip: %d, skipped %v\n%s", resp.StatusCode, skipped(), body)
	}
	resp, body = consoleReq{method: "GET", path: "/ui/events/2?publisher=partner"}.do(t, ts)
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(body, "id 2 is Kafka&#39;s") {
		t.Fatalf("Kafka's event as the partner's: %d\n%s", resp.StatusCode, body)
	}
}

// TestConsoleSessionEnds: a session cookie is valid for its process and
// token, for sessionMaxAge: one issued longer ago, one from another
// process (another secret), one for another token, or a forged one is
// not.
func TestConsoleSessionEnds(t *testing.T) {
	mk := func(token string) *console {
		s := &Server{opts: Options{Token: token}}
		c := &console{s: s, secret: []byte("0123456789abcdef0123456789abcdef")}
		return c
	}
	c := mk("s3cret")
	now := time.Now()
	other := mk("s3cret")
	other.secret = []byte("another process's secret.........")
	for _, tt := range []struct {
		name  string
		value string
		valid bool
	}{
		{"just issued", c.session(now), true},
		{"issued 11 hours ago", c.session(now.Add(-11 * time.Hour)), true},
		{"issued 13 hours ago", c.session(now.Add(-13 * time.Hour)), false},
		{"issued in the future", c.session(now.Add(time.Hour)), false},
		{"another process's", other.session(now), false},
		{"another token's", mk("other").session(now), false},
		{"forged time", strconv.FormatInt(now.Unix(), 10) + "." + strings.SplitN(c.session(now.Add(-time.Hour)), ".", 2)[1], false},
		{"no time", "abc", false},
	} {
		if got := c.validSession(tt.value); got != tt.valid {
			t.Errorf("%s: valid %t, want %t", tt.name, got, tt.valid)
		}
	}
}

// TestConsoleSignInLimited: five wrong tokens from an address, then its
// sixth attempt is refused (429, Retry-After) before the token is read,
// the right one too; another address may still try; one attempt more is
// allowed every signInEvery.
func TestConsoleSignInLimited(t *testing.T) {
	const token = "s3cret-token"
	ts := serve(t, &fakeRelay{st: report.Status{Ready: true, Role: report.RoleLeader}}, token, false)
	csrf := csrfOf(t, ts, "/ui/login", nil)
	try := func(given string) *http.Response {
		resp, _ := consoleReq{method: "POST", path: "/ui/login", form: url.Values{"csrf": {csrf}, "token": {given}}}.do(t, ts)
		return resp
	}
	for i := 0; i < signInBurst; i++ {
		if resp := try("wrong"); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d, want 401", i+1, resp.StatusCode)
		}
	}
	resp := try(token)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || len(resp.Cookies()) != 0 {
		t.Fatalf("after %d wrong tokens, the right one: %d (Retry-After %q), want 429 and no cookie", signInBurst, resp.StatusCode, resp.Header.Get("Retry-After"))
	}

	var l signInLimiter
	now := time.Now()
	a := &http.Request{RemoteAddr: "192.0.2.1:1234"}
	b := &http.Request{RemoteAddr: "192.0.2.2:1234"}
	for i := 0; i < signInBurst; i++ {
		if ok, _ := l.allow(a, now); !ok {
			t.Fatalf("attempt %d refused", i+1)
		}
		l.failed(a, now)
	}
	if ok, wait := l.allow(a, now); ok || wait <= 0 || wait > signInEvery {
		t.Fatalf("after the burst: allowed %t, wait %s", ok, wait)
	}
	if ok, _ := l.allow(b, now); !ok {
		t.Fatal("another address refused")
	}
	if ok, _ := l.allow(a, now.Add(signInEvery)); !ok {
		t.Fatal("refused one interval later")
	}
}
