package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cdc-relay/cdc-relay/relay"
	"github.com/cdc-relay/cdc-relay/report"
	"github.com/cdc-relay/cdc-relay/status"
)

// fakeRelay is a relay whose state the test sets.
type fakeRelay struct {
	st      report.Status
	rows    []status.Row
	retried []int64
	topic   string // the topic of the last retry
	listed  status.ListOptions
	topics  map[string]bool // paused topics
	down    bool            // the relay is not connected to PostgreSQL
	// stores are the status stores of the relay's publishers, by name
	// (Failures); nil: none, as a relay not connected yet.
	stores map[string]*status.Store
	// history is what History returns.
	history []report.Point
}

func (f *fakeRelay) Failures(publisher string) (*status.Store, error) {
	switch s, ok := f.stores[publisher]; {
	case f.down || f.stores == nil:
		return nil, relay.ErrNotConnected
	case !ok:
		return nil, fmt.Errorf("publisher %q: %w", publisher, relay.ErrUnknownPublisher)
	default:
		return s, nil
	}
}

// PauseTopicOf and ResumeTopicOf change the publisher's pause in its
// store, as the relay does (which holds its session's events too).
func (f *fakeRelay) PauseTopicOf(ctx context.Context, publisher, topic string) (bool, error) {
	s, err := f.Failures(publisher)
	if err != nil {
		return false, err
	}
	return s.PauseTopic(ctx, topic)
}

func (f *fakeRelay) ResumeTopicOf(ctx context.Context, publisher, topic string) (bool, error) {
	s, err := f.Failures(publisher)
	if err != nil {
		return false, err
	}
	return s.ResumeTopic(ctx, topic)
}

func (f *fakeRelay) PauseTopic(_ context.Context, topic string) (bool, error) {
	return f.setTopic(topic, true)
}

func (f *fakeRelay) ResumeTopic(_ context.Context, topic string) (bool, error) {
	return f.setTopic(topic, false)
}

func (f *fakeRelay) setTopic(topic string, paused bool) (bool, error) {
	if f.down {
		return false, relay.ErrNotConnected
	}
	if f.topics == nil {
		f.topics = map[string]bool{}
	}
	was := f.topics[topic]
	f.topics[topic] = paused
	return was != paused, nil
}

func (f *fakeRelay) Status() report.Status   { return f.st }
func (f *fakeRelay) History() []report.Point { return f.history }
func (f *fakeRelay) Pause() bool             { was := f.st.Paused; f.st.Paused = true; return !was }
func (f *fakeRelay) Resume() bool            { was := f.st.Paused; f.st.Paused = false; return was }
func (f *fakeRelay) Failed(_ context.Context, opts status.ListOptions) ([]status.Row, error) {
	f.listed = opts
	return f.rows, nil
}
func (f *fakeRelay) Retry(_ context.Context, opts status.RetryOptions) ([]status.Change, error) {
	switch {
	case strings.HasPrefix(opts.Topic, "_"):
		return nil, fmt.Errorf("%w: not allowed", status.ErrTopicRefused)
	case opts.Topic == "kept":
		return nil, fmt.Errorf("%w: id 7 is already for topic %q", status.ErrTopicKept, opts.Topic)
	case opts.Topic == "taken":
		return nil, fmt.Errorf("%w: id 7: its event has a row for topic %q already", status.ErrTopicTaken, opts.Topic)
	}
	f.topic = opts.Topic
	var out []status.Change
	for _, id := range opts.IDs {
		for _, r := range f.rows {
			if r.ID == id {
				f.retried = append(f.retried, id)
				out = append(out, status.Change{ID: id, Was: r.Status})
			}
		}
	}
	if len(out) == 0 {
		return nil, status.ErrNotFound
	}
	return out, nil
}

// RetryOf retries through the publisher's store, as the relay does: its
// new topic is the last retry's.
func (f *fakeRelay) RetryOf(ctx context.Context, publisher string, opts status.RetryOptions) ([]status.Change, error) {
	s, err := f.Failures(publisher)
	if err != nil {
		return nil, err
	}
	f.topic = opts.Topic
	return s.Retry(ctx, opts)
}

func serve(t *testing.T, r Relay, token string, loopback bool) *httptest.Server {
	s := &Server{relay: r, opts: Options{Token: token, Logger: slog.New(slog.DiscardHandler)}, loopback: loopback}
	var err error
	if s.console, err = newConsole(s); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.routes())
	t.Cleanup(ts.Close)
	return ts
}

func do(t *testing.T, ts *httptest.Server, method, path, token string) (int, string) {
	t.Helper()
	r := consoleReq{method: method, path: path}
	if token != "" {
		r.header = map[string]string{"Authorization": "Bearer " + token}
	}
	resp, body := r.do(t, ts)
	return resp.StatusCode, body
}

// TestTokenRule: the admin endpoints need the token when there is one,
// and a loopback address when there is none; the others need neither.
func TestTokenRule(t *testing.T) {
	tests := []struct {
		name     string
		token    string // the server's
		loopback bool
		sent     string // the request's
		method   string
		path     string
		want     int
	}{
		{"token, none sent", "s3cret", true, "", "POST", "/pause", http.StatusUnauthorized},
		{"token, wrong one sent", "s3cret", true, "s3cre", "POST", "/resume", http.StatusUnauthorized},
		{"token, right one sent", "s3cret", false, "s3cret", "POST", "/pause", http.StatusOK},
		{"token, list parked events without it", "s3cret", true, "", "GET", "/failed", http.StatusUnauthorized},
		{"token, retry without it", "s3cret", true, "", "POST", "/failed/7/retry", http.StatusUnauthorized},
		{"no token, loopback", "", true, "", "POST", "/pause", http.StatusOK},
		{"no token, not loopback", "", false, "", "POST", "/pause", http.StatusForbidden},
		{"no token, not loopback, list", "", false, "", "GET", "/failed", http.StatusForbidden},
		{"status needs no token", "s3cret", false, "", "GET", "/status", http.StatusOK},
		{"healthz needs no token", "s3cret", false, "", "GET", "/healthz", http.StatusOK},
		{"pause is POST only", "", true, "", "GET", "/pause", http.StatusMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := serve(t, &fakeRelay{st: report.Status{Ready: true}}, tt.token, tt.loopback)
			if got, body := do(t, ts, tt.method, tt.path, tt.sent); got != tt.want {
				t.Errorf("%s %s: %d %s, want %d", tt.method, tt.path, got, body, tt.want)
			}
		})
	}
}

// TestEndpoints: readiness, pause and resume, and the parked events.
func TestEndpoints(t *testing.T) {
	f := &fakeRelay{st: report.Status{Role: report.RoleLeader, NotReady: "Kafka does not answer: dial refused"},
		rows: []status.Row{{ID: 7, Status: status.Dead, Topic: "orders", SourceTable: "public.outbox", Value: []byte(`{"n":1}`)},
			{ID: 6, Status: status.Dead, Topic: "orders"}}} // parked before the status table recorded its table
	ts := serve(t, f, "", true)

	if code, _ := do(t, ts, "GET", "/readyz", ""); code != http.StatusServiceUnavailable {
		t.Errorf("GET /readyz of a relay not ready: %d, want 503", code)
	}
	f.st.Ready, f.st.NotReady = true, ""
	if code, _ := do(t, ts, "GET", "/readyz", ""); code != http.StatusOK {
		t.Errorf("GET /readyz of a ready relay: %d, want 200", code)
	}
	for _, c := range []struct {
		path          string
		paused, chngd bool
	}{{"/pause", true, true}, {"/pause", true, false}, {"/resume", false, true}, {"/resume", false, false}} {
		code, body := do(t, ts, "POST", c.path, "")
		var got pauseResult
		if err := json.Unmarshal([]byte(body), &got); code != http.StatusOK || err != nil || got.Paused != c.paused || got.Changed != c.chngd {
			t.Errorf("POST %s: %d %s, want paused=%v changed=%v", c.path, code, body, c.paused, c.chngd)
		}
	}

	code, body := do(t, ts, "GET", "/failed?state=dead&limit=5", "")
	var rows []map[string]any
	if err := json.Unmarshal([]byte(body), &rows); code != http.StatusOK || err != nil || len(rows) != 2 || rows[0]["topic"] != "orders" {
		t.Fatalf("GET /failed: %d %s", code, body)
	}
	if table, ok := rows[1]["source_table"]; rows[0]["source_table"] != "public.outbox" || !ok || table != nil {
		t.Errorf("GET /failed: source_table %v and %v, want \"public.outbox\" and null: %s", rows[0]["source_table"], table, body)
	}
	if f.listed.Status != status.Dead || f.listed.Limit != 5 {
		t.Errorf("GET /failed?state=dead&limit=5 listed %+v", f.listed)
	}
	if code, body := do(t, ts, "GET", "/failed?state=waiting", ""); code != http.StatusOK || f.listed.Status != status.Waiting {
		t.Errorf("GET /failed?state=waiting: %d %s, listed %+v", code, body, f.listed)
	}
	if code, body := do(t, ts, "GET", "/failed?status=paused", ""); code != http.StatusOK || f.listed.Status != status.Paused {
		t.Errorf("GET /failed?status=paused (the CLI's word): %d %s, listed %+v", code, body, f.listed)
	}
	for _, q := range []struct{ query, says string }{
		{"?state=gone", "want FAILED, DEAD, WAITING, PAUSED or DELIVERED"},
		{"?limit=0", "want a positive number"},
		{"?limit=-1", "want a positive number"},
		{"?limit=x", "want a positive number"},
		{"?limit=1001", "at most 1000 rows"},
		{"?limit=99999999999999999999", "limit 99999999999999999999: at most 1000 rows a request"},
	} {
		if code, body := do(t, ts, "GET", "/failed"+q.query, ""); code != http.StatusBadRequest || !strings.Contains(body, q.says) {
			t.Errorf("GET /failed%s: %d %s, want 400 saying %q", q.query, code, body, q.says)
		}
	}
	for _, c := range []struct {
		query string
		limit int
	}{{"", 100}, {"?limit=1", 1}, {"?limit=1000", 1000}} {
		if code, body := do(t, ts, "GET", "/failed"+c.query, ""); code != http.StatusOK || f.listed.Limit != c.limit {
			t.Errorf("GET /failed%s: %d %s, listed %+v, want limit %d", c.query, code, body, f.listed, c.limit)
		}
	}
	if code, body := do(t, ts, "POST", "/failed/7/retry", ""); code != http.StatusOK || len(f.retried) != 1 {
		t.Errorf("POST /failed/7/retry: %d %s, retried %v", code, body, f.retried)
	}
	if code, _ := do(t, ts, "POST", "/failed/8/retry", ""); code != http.StatusNotFound {
		t.Errorf("POST /failed/8/retry of no row: %d, want 404", code)
	}
	if code, _ := do(t, ts, "POST", "/failed/x/retry", ""); code != http.StatusBadRequest {
		t.Errorf("POST /failed/x/retry: %d, want 400", code)
	}
	if code, body := do(t, ts, "POST", "/failed/7/retry?topic=orders.fixed", ""); code != http.StatusOK || f.topic != "orders.fixed" ||
		!strings.Contains(body, `"topic": "orders.fixed"`) {
		t.Errorf("POST /failed/7/retry?topic=orders.fixed: %d %s, retried to %q", code, body, f.topic)
	}
	for q, want := range map[string]int{"?topic=": 400, "?topic=__consumer_offsets": 400, "?topic=kept": 400, "?topic=taken": 409} {
		if code, body := do(t, ts, "POST", "/failed/7/retry"+q, ""); code != want {
			t.Errorf("POST /failed/7/retry%s: %d %s, want %d", q, code, body, want)
		}
	}
}

// TestPauseTopic: ?topic= pauses and resumes one topic, not the relay,
// and says whether it changed anything; an empty topic or a relay not
// connected yet is an error.
func TestPauseTopic(t *testing.T) {
	f := &fakeRelay{}
	ts := serve(t, f, "s3cret", true)
	tests := []struct {
		path    string
		code    int
		want    pauseResult
		paused  bool // orders, after
		problem string
	}{
		{path: "/pause?topic=orders", code: 200, want: pauseResult{Topic: "orders", Paused: true, Changed: true}, paused: true},
		{path: "/pause?topic=orders", code: 200, want: pauseResult{Topic: "orders", Paused: true}, paused: true},
		{path: "/resume?topic=payments", code: 200, want: pauseResult{Topic: "payments"}, paused: true},
		{path: "/resume?topic=orders", code: 200, want: pauseResult{Topic: "orders", Changed: true}},
		{path: "/pause?topic=", code: 400, problem: "name the topic"},
	}
	for _, tt := range tests {
		code, body := do(t, ts, "POST", tt.path, "s3cret")
		var got pauseResult
		_ = json.Unmarshal([]byte(body), &got)
		switch {
		case code != tt.code:
			t.Errorf("POST %s: %d %s, want %d", tt.path, code, body, tt.code)
		case tt.problem != "" && !strings.Contains(body, tt.problem):
			t.Errorf("POST %s: %s, want it to say %q", tt.path, body, tt.problem)
		case tt.problem == "" && got != tt.want:
			t.Errorf("POST %s: %s, want %+v", tt.path, body, tt.want)
		case f.topics["orders"] != tt.paused || f.st.Paused:
			t.Errorf("POST %s: orders paused %v, relay paused %v; want %v and false", tt.path, f.topics["orders"], f.st.Paused, tt.paused)
		}
	}
	if code, _ := do(t, ts, "POST", "/pause?topic=orders", ""); code != http.StatusUnauthorized {
		t.Errorf("POST /pause?topic=orders without the token: %d, want 401", code)
	}
	f.down = true
	if code, _ := do(t, ts, "POST", "/pause?topic=orders", "s3cret"); code != http.StatusServiceUnavailable {
		t.Errorf("POST /pause?topic=orders before the relay connected: %d, want 503", code)
	}
}

// TestLoopbackWithoutTokenRefusesWebPages: without a token, a request that
// a browser sends for a web page (an Origin header, or a Host that is not
// loopback, as after DNS rebinding) is refused; a token's scheme is
// case-insensitive.
func TestLoopbackWithoutTokenRefusesWebPages(t *testing.T) {
	for _, tt := range []struct {
		name, token, header, value, host string
		want                             int
	}{
		{"curl", "", "", "", "", http.StatusOK},
		{"localhost", "", "", "", "localhost:7187", http.StatusOK},
		{"a web page", "", "Origin", "https://evil.example", "", http.StatusForbidden},
		{"rebound DNS name", "", "", "", "evil.example:7187", http.StatusForbidden},
		{"bearer in lower case", "s3cret", "Authorization", "bearer s3cret", "", http.StatusOK},
		{"basic", "s3cret", "Authorization", "Basic s3cret", "", http.StatusUnauthorized},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts := serve(t, &fakeRelay{}, tt.token, true)
			req, err := http.NewRequest("POST", ts.URL+"/pause", nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.header != "" {
				req.Header.Set(tt.header, tt.value)
			}
			if tt.host != "" {
				req.Host = tt.host
			}
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("POST /pause: %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
}

// TestListenKnowsLoopback: the rule follows the address really listened
// on.
func TestListenKnowsLoopback(t *testing.T) {
	for _, tt := range []struct {
		addr     string
		loopback bool
	}{
		{"127.0.0.1:0", true},
		{"localhost:0", true},
		{"[::1]:0", true},
		{"0.0.0.0:0", false},
		{":0", false},
	} {
		s, err := Listen(&fakeRelay{}, Options{Addr: tt.addr})
		if err != nil {
			t.Logf("listen on %s: %v (skipped)", tt.addr, err) // no IPv6 here
			continue
		}
		if s.loopback != tt.loopback {
			t.Errorf("listening on %s (%s): loopback %v, want %v", tt.addr, s.Addr(), s.loopback, tt.loopback)
		}
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}
}

func TestErrorStatus(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{fmt.Errorf("event 7: %w", status.ErrNotFound), http.StatusNotFound},
		{fmt.Errorf("event 7: %w", status.ErrDelivered), http.StatusConflict},
		{fmt.Errorf("event 7 is WAITING: %w event 3", status.ErrHeld), http.StatusConflict},
		{fmt.Errorf("retry: %w: not a topic", status.ErrTopicRefused), http.StatusBadRequest},
		{fmt.Errorf("retry: %w: id 7 is already for topic \"t\"", status.ErrTopicKept), http.StatusBadRequest},
		{fmt.Errorf("retry: %w: id 7 has a row for topic \"t\" already", status.ErrTopicTaken), http.StatusConflict},
		{relay.ErrNotConnected, http.StatusServiceUnavailable},
		{fmt.Errorf("publisher %q: %w", "x", relay.ErrUnknownPublisher), http.StatusBadRequest},
		{otherPublisher{id: 7, publisher: "partner"}, http.StatusNotFound},
		{errors.New("connection refused"), http.StatusInternalServerError},
	} {
		if got := errorStatus(c.err); got != c.want {
			t.Errorf("errorStatus(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}
