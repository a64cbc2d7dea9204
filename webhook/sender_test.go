package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// testConfig is a valid Config for url; its secret comes from an
// environment variable the tests never set (they give New the Secret).
func testConfig(url string) Config {
	return Config{URL: url, SecretEnv: "CDC_RELAY_TEST_WEBHOOK_SECRET"}
}

func mustSecret(t testing.TB, s string) Secret {
	t.Helper()
	sec, err := ParseSecret(s)
	if err != nil {
		t.Fatal(err)
	}
	return sec
}

func newSender(t testing.TB, cfg Config) *Sender {
	t.Helper()
	s, err := New(cfg, mustSecret(t, testSecret), 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestSignatureKnownAnswer signs the vector every library of the Standard
// Webhooks project tests against.
func TestSignatureKnownAnswer(t *testing.T) {
	s := mustSecret(t, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	got := s.signature("msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("signature = %s, want %s", got, want)
	}
}

func TestSendOne(t *testing.T) {
	for _, tc := range []struct {
		name        string
		cfg         func(*Config)
		msg         Message
		wantMethod  string
		wantType    string
		wantHeaders map[string][]string // a header's values; nil: absent
		wantOmitted []string
	}{
		{name: "json", msg: Message{ID: "41", Payload: []byte(`{"a": 1}`)}, wantMethod: "POST", wantType: "application/json"},
		{name: "text, PUT", cfg: func(c *Config) { c.Method = "PUT" },
			msg:        Message{ID: "0/16B3748", Payload: []byte("plain text"), ContentType: "text/plain; charset=utf-8"},
			wantMethod: "PUT", wantType: "text/plain; charset=utf-8"},
		{name: "no payload", msg: Message{ID: "43"}, wantMethod: "POST", wantType: "application/json"},
		{name: "headers",
			cfg: func(c *Config) { c.Headers = map[string]string{"Authorization": "Bearer static-token"} },
			msg: Message{ID: "44", Payload: []byte("{}"), Headers: []Header{
				{"id", []byte("44")}, {"recipient id", []byte("r-1")}, {"tag", []byte("a")}, {"tag", []byte("b")},
				{"trace.parent_id", []byte("00-ab")}, {"région", []byte("eu")},
				{"content-type", []byte("text/evil")}, {"WEBHOOK-ID", []byte("forged")}, {"authorization", []byte("Bearer mapped")},
				{"note", []byte("two\nlines")}, {"", []byte("nameless")},
			}},
			wantMethod: "POST", wantType: "application/json",
			wantHeaders: map[string][]string{
				"Id": {"44"}, "Recipient-Id": {"r-1"}, "Tag": {"a", "b"}, "Trace.parent_id": {"00-ab"}, "R--gion": {"eu"},
				"Authorization": {"Bearer static-token"}, "Webhook-Id": {"44"}, "Note": nil,
			},
			wantOmitted: []string{"content-type", "WEBHOOK-ID", "authorization", "note", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := newReceiver(t, nil)
			cfg := testConfig(rc.srv.URL + "/hooks?tenant=7")
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			r := newSender(t, cfg).Send(context.Background(), []Message{tc.msg})
			if r.Outcome != Delivered || r.Status != http.StatusNoContent || r.Err != nil {
				t.Fatalf("result = %+v, want delivered with 204", r)
			}
			if r.Latency <= 0 {
				t.Errorf("latency = %s", r.Latency)
			}
			if !slices.Equal(r.Omitted, tc.wantOmitted) {
				t.Errorf("omitted = %q, want %q", r.Omitted, tc.wantOmitted)
			}
			got := rc.requests(t)
			if len(got) != 1 {
				t.Fatalf("%d requests, want 1", len(got))
			}
			req := got[0]
			if req.method != tc.wantMethod || req.path != "/hooks?tenant=7" {
				t.Errorf("request %s %s, want %s /hooks?tenant=7", req.method, req.path, tc.wantMethod)
			}
			if !bytes.Equal(req.body, tc.msg.Payload) {
				t.Errorf("body = %q, want the payload %q", req.body, tc.msg.Payload)
			}
			if id := req.header.Get("webhook-id"); id != tc.msg.ID {
				t.Errorf("webhook-id = %q, want the event's id %q", id, tc.msg.ID)
			}
			if ct := req.header.Get("Content-Type"); ct != tc.wantType {
				t.Errorf("content-type = %q, want %q", ct, tc.wantType)
			}
			for name, want := range tc.wantHeaders {
				if got := req.header.Values(name); !slices.Equal(got, want) {
					t.Errorf("header %s = %q, want %q", name, got, want)
				}
			}
		})
	}
}

// TestSendStampsTheAttempt checks that webhook-timestamp is the attempt's
// time, not the event's: an event from an hour ago still verifies within
// the receivers' five minutes.
func TestSendStampsTheAttempt(t *testing.T) {
	rc := newReceiver(t, nil)
	s := newSender(t, testConfig(rc.srv.URL))
	before := time.Now().Unix()
	s.Send(context.Background(), []Message{{ID: "1", Time: time.Now().Add(-time.Hour), Payload: []byte("{}")}})
	got := rc.requests(t)
	if len(got) != 1 {
		t.Fatalf("%d requests", len(got))
	}
	ts, err := strconv.ParseInt(got[0].header.Get("webhook-timestamp"), 10, 64)
	if err != nil || ts < before || ts > time.Now().Unix() {
		t.Errorf("webhook-timestamp %d (%v), want the time of sending, from %d", ts, err, before)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestSendBatch(t *testing.T) {
	rc := newReceiver(t, nil)
	cfg := testConfig(rc.srv.URL)
	cfg.BatchSize = 10
	s := newSender(t, cfg)
	at := time.Date(2026, 3, 4, 5, 6, 7, 890000000, time.FixedZone("CET", 3600))
	msgs := []Message{
		{ID: "1", Time: at, Payload: []byte(`{"amount": 5}`), Headers: []Header{{"id", []byte("1")}, {"k", []byte("x")}, {"k", []byte("y")}}},
		{ID: "2", Payload: []byte("not json"), ContentType: "text/plain"},
		{ID: "3", Payload: []byte(`"a string"`), ContentType: "application/cloudevents+json"},
		{ID: "4", Payload: []byte{0xff, 0x00, 0x01}, ContentType: "application/octet-stream"},
		{ID: "5"},
		{ID: "6", Payload: []byte(`{"broken"`)},
	}
	r := s.Send(context.Background(), msgs)
	if r.Outcome != Delivered {
		t.Fatalf("result = %+v", r)
	}
	if r.Omitted != nil {
		t.Errorf("omitted = %q: a batch sends the headers in its body", r.Omitted)
	}
	got := rc.requests(t)
	if len(got) != 1 {
		t.Fatalf("%d requests, want 1", len(got))
	}
	req := got[0]
	if ct := req.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("content-type = %q", ct)
	}
	if k := req.header.Get("K"); k != "" {
		t.Errorf("header K = %q: a batch's event headers are not HTTP headers", k)
	}
	if id := req.header.Get("webhook-id"); id != BatchID(msgs) || !strings.HasPrefix(id, "batch_") || strings.Contains(id, ".") {
		t.Errorf("webhook-id = %q, want BatchID's %q", id, BatchID(msgs))
	}
	var elems []map[string]json.RawMessage
	if err := json.Unmarshal(req.body, &elems); err != nil {
		t.Fatalf("body %s: %v", req.body, err)
	}
	want := []map[string]string{
		{"id": `"1"`, "timestamp": `"2026-03-04T04:06:07.89Z"`, "content_type": `"application/json"`,
			"headers": `{"id":"1","k":"y"}`, "payload": `{"amount": 5}`},
		{"id": `"2"`, "content_type": `"text/plain"`, "headers": `{}`, "payload": `"not json"`},
		{"id": `"3"`, "content_type": `"application/cloudevents+json"`, "headers": `{}`, "payload": `"a string"`},
		{"id": `"4"`, "content_type": `"application/octet-stream"`, "headers": `{}`, "payload_base64": `"/wAB"`},
		{"id": `"5"`, "content_type": `"application/json"`, "headers": `{}`, "payload": `null`},
		{"id": `"6"`, "content_type": `"application/json"`, "headers": `{}`, "payload": `"{\"broken\""`},
	}
	if len(elems) != len(want) {
		t.Fatalf("%d elements, want %d: %s", len(elems), len(want), req.body)
	}
	for i, w := range want {
		if len(elems[i]) != len(w) {
			t.Errorf("element %d has keys %v, want %v", i, keys(elems[i]), keys(w))
		}
		for k, v := range w {
			if string(elems[i][k]) != v {
				t.Errorf("element %d: %s = %s, want %s", i, k, elems[i][k], v)
			}
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestBatchID checks that a batch's id depends on its events' ids in
// order, and only on them.
func TestBatchID(t *testing.T) {
	ids := func(ids ...string) []Message {
		var m []Message
		for _, id := range ids {
			m = append(m, Message{ID: id, Payload: []byte(id)})
		}
		return m
	}
	a := BatchID(ids("1", "2", "3"))
	again := ids("1", "2", "3")
	again[0].Payload, again[0].Time = []byte("other"), time.Now()
	if b := BatchID(again); b != a {
		t.Errorf("the same ids give %s, then %s", a, b)
	}
	for _, other := range [][]Message{ids("1", "3", "2"), ids("1", "2"), ids("12", "3"), ids("1", "23"), ids("1", "2", "3", "")} {
		if BatchID(other) == a {
			t.Errorf("ids %v give the id of 1, 2, 3", other)
		}
	}
	if len(a) != len("batch_")+22 {
		t.Errorf("id %q: want batch_ and 22 characters", a)
	}
}

// TestSendBatchOfOne checks that a Sender of batches sends one event as
// an array too, so that its receiver always gets one shape.
func TestSendBatchOfOne(t *testing.T) {
	rc := newReceiver(t, nil)
	cfg := testConfig(rc.srv.URL)
	cfg.BatchSize = 2
	msgs := []Message{{ID: "9", Payload: []byte(`{}`)}}
	newSender(t, cfg).Send(context.Background(), msgs)
	got := rc.requests(t)
	if len(got) != 1 || string(got[0].body) != `[{"id":"9","content_type":"application/json","headers":{},"payload":{}}]` {
		t.Fatalf("requests %+v", got)
	}
	if id := got[0].header.Get("webhook-id"); id != BatchID(msgs) {
		t.Errorf("webhook-id = %q", id)
	}
}

func TestSendClassifies(t *testing.T) {
	for _, tc := range []struct {
		status int
		want   Outcome
	}{
		{200, Delivered}, {201, Delivered}, {202, Delivered}, {204, Delivered}, {299, Delivered},
		{301, Refused}, {302, Refused}, {307, Refused}, {308, Refused},
		{400, Refused}, {401, Refused}, {403, Refused}, {404, Refused}, {410, Refused}, {413, Refused}, {422, Refused},
		{408, Retry}, {429, Retry},
		{500, Retry}, {502, Retry}, {503, Retry}, {504, Retry}, {599, Retry},
	} {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			redirected := false
			rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/moved" {
					redirected = true
					return
				}
				if tc.status >= 300 && tc.status < 400 {
					w.Header().Set("Location", "/moved")
				}
				w.WriteHeader(tc.status)
				w.Write([]byte("the receiver's\nanswer"))
			})
			r := newSender(t, testConfig(rc.srv.URL+"/hooks")).Send(context.Background(), []Message{{ID: "1", Payload: []byte("{}")}})
			if r.Outcome != tc.want || r.Status != tc.status {
				t.Fatalf("status %d: outcome %s, status %d; want %s", tc.status, r.Outcome, r.Status, tc.want)
			}
			if redirected {
				t.Errorf("status %d: the redirect was followed", tc.status)
			}
			rc.requests(t)
			if tc.want == Delivered {
				if r.Err != nil {
					t.Errorf("err = %v", r.Err)
				}
				return
			}
			if r.Err == nil || !strings.Contains(r.Err.Error(), "HTTP "+itoa(int64(tc.status))) ||
				!strings.Contains(r.Err.Error(), ": the receiver's answer") {
				t.Errorf("err = %v, want the status and the answer's first bytes on one line", r.Err)
			}
		})
	}
}

func TestSendRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		name, header string
		want, slack  time.Duration
	}{
		{"seconds", "120", 2 * time.Minute, 0},
		{"date", time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat), 90 * time.Second, 2 * time.Second},
		{"capped", "86400", MaxRetryAfter, 0},
		{"none", "", 0, 0},
		{"unreadable", "soon", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := newReceiver(t, func(w http.ResponseWriter, _ *http.Request) {
				if tc.header != "" {
					w.Header().Set("Retry-After", tc.header)
				}
				w.WriteHeader(http.StatusTooManyRequests)
			})
			r := newSender(t, testConfig(rc.srv.URL)).Send(context.Background(), []Message{{ID: "1"}})
			if r.Outcome != Retry || r.RetryAfter < tc.want-tc.slack || r.RetryAfter > tc.want {
				t.Errorf("Retry-After %q: %s, retry after %s; want retry after %s (-%s)", tc.header, r.Outcome, r.RetryAfter, tc.want, tc.slack)
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"0": 0, "1": time.Second, " 30 ": 30 * time.Second, "-5": 0, "900": MaxRetryAfter, "901": MaxRetryAfter,
		"10000000000":          MaxRetryAfter, // would overflow a Duration
		"99999999999999999999": 0, "1.5": 0,   // not an int64
		"Fri, 02 Jan 2026 03:05:05 GMT":  time.Minute,
		"Friday, 02-Jan-26 03:04:35 GMT": 30 * time.Second,
		"Fri Jan  2 03:04:15 2026":       10 * time.Second,
		"Fri, 02 Jan 2026 03:00:00 GMT":  0, // past
		"Sat, 03 Jan 2026 03:04:05 GMT":  MaxRetryAfter,
	} {
		if got := parseRetryAfter(v, now); got != want {
			t.Errorf("parseRetryAfter(%q) = %s, want %s", v, got, want)
		}
	}
}

func TestSendTimeout(t *testing.T) {
	rc := newReceiver(t, func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	cfg := testConfig(rc.srv.URL)
	cfg.Timeout = 200 * time.Millisecond
	r := newSender(t, cfg).Send(context.Background(), []Message{{ID: "1", Payload: []byte("{}")}})
	if r.Outcome != Retry || r.Status != 0 {
		t.Fatalf("result %+v, want retry without a status", r)
	}
	if !strings.Contains(r.Err.Error(), "no answer within the timeout, 200ms") || !errors.Is(r.Err, context.DeadlineExceeded) {
		t.Errorf("err = %v", r.Err)
	}
	if r.Latency < 200*time.Millisecond || r.Latency > 3*time.Second {
		t.Errorf("latency %s, want about the timeout", r.Latency)
	}
	if c := r.Class(); c != "timeout" {
		t.Errorf("class %q, want timeout", c)
	}
}

// TestSendStopped checks that a Send that the caller's context ends is a
// Retry that says so (errors.Is context.Canceled).
func TestSendStopped(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	rc := newReceiver(t, func(_ http.ResponseWriter, r *http.Request) {
		cancel()
		<-r.Context().Done()
	})
	r := newSender(t, testConfig(rc.srv.URL)).Send(ctx, []Message{{ID: "1"}})
	if r.Outcome != Retry || !errors.Is(r.Err, context.Canceled) || !strings.Contains(r.Err.Error(), "stopped before an answer") {
		t.Fatalf("result %+v, err %v", r, r.Err)
	}
	if c := r.Class(); c != "" {
		t.Errorf("class %q, want none: the caller stopped it", c)
	}
}

func TestSendConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	r := newSender(t, testConfig("http://"+addr+"/hooks")).Send(context.Background(), []Message{{ID: "1"}})
	if r.Outcome != Retry || r.Status != 0 || !strings.Contains(r.Err.Error(), "connection refused") {
		t.Fatalf("result %+v, err %v; want retry, connection refused", r, r.Err)
	}
	if c := r.Class(); c != "connection" {
		t.Errorf("class %q, want connection", c)
	}
	if !strings.HasPrefix(r.Err.Error(), "POST http://"+addr+"/hooks: ") {
		t.Errorf("err %q does not start with the request", r.Err)
	}
}

// TestSendRefusesAnUnsendableID checks that an id that cannot be a
// header's value is refused before anything is sent.
func TestSendRefusesAnUnsendableID(t *testing.T) {
	rc := newReceiver(t, nil)
	for _, batch := range []int{1, 5} {
		cfg := testConfig(rc.srv.URL)
		cfg.BatchSize = batch
		s := newSender(t, cfg)
		for _, id := range []string{"", "two\nlines"} {
			if r := s.Send(context.Background(), []Message{{ID: "1"}, {ID: id}}[2-min(batch, 2):]); r.Outcome != Refused || r.Err == nil {
				t.Errorf("batch %d, id %q: %+v, want refused", batch, id, r)
			}
		}
	}
	if got := rc.requests(t); len(got) != 0 {
		t.Errorf("%d requests sent", len(got))
	}
}

func TestSendPanicsPastTheBatchSize(t *testing.T) {
	s := newSender(t, testConfig("http://127.0.0.1:1"))
	defer func() {
		if recover() == nil {
			t.Error("Send of 2 messages with BatchSize 1 did not panic")
		}
	}()
	s.Send(context.Background(), []Message{{ID: "1"}, {ID: "2"}})
}

func TestHeaderName(t *testing.T) {
	for k, want := range map[string]string{
		"id": "id", "recipient_id": "recipient_id", "trace.id": "trace.id", "X-Custom": "X-Custom",
		"recipient id": "recipient-id", "a:b": "a-b", "é": "--", "(x)": "-x-", "": "", "a\nb": "a-b",
	} {
		if got := HeaderName(k); got != want {
			t.Errorf("HeaderName(%q) = %q, want %q", k, got, want)
		}
	}
}

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", `q"uote\back`, "tab\tnl\ncr\r\x00\x1f\x7f", "é✓𝄞", "bad\xff\xfe utf8", "</script>&"} {
		b := appendString(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Errorf("appendString(%q) = %s: %v", s, b, err)
			continue
		}
		want, _ := json.Marshal(s)
		var wantS string
		json.Unmarshal(want, &wantS)
		if got != wantS {
			t.Errorf("appendString(%q) reads back %q, want %q", s, got, wantS)
		}
	}
}
