package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// The secrets of the redaction tests: the signing secret's forms, and a
// URL's and a static header's tokens.
var secrets = []string{
	strings.TrimPrefix(testSecret, "whsec_"),      // the secret's base64
	"c2VjcmV0LW9mLXRoZS13ZWJob29rLXRlc3RzLTMyYnk", // unpadded
	"secret-of-the-webhook-tests-32by",            // its bytes
	"relay-user-abc", "pa55-w0rd-xyz",             // the URL's user information
	"tok3n-abcdef",   // its query
	"hdr-s3cret-xyz", // a static header's
	longToken[:40],   // another's, long
}

// longToken is a static header's value longer than the part of an answer
// that is read: echoed twice, the read cuts its second copy.
var longToken = "LT" + strings.Repeat("0123456789abcdef", 190)

// leaks returns the secrets text shows.
func leaks(text string) []string {
	var out []string
	for _, s := range secrets {
		if strings.Contains(text, s) {
			out = append(out, s)
		}
	}
	return out
}

// TestSecretNeverShows prints a Secret every way a program may.
func TestSecretNeverShows(t *testing.T) {
	s := mustSecret(t, testSecret)
	var logged bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logged, nil))
	log.Info("x", "secret", s, "in", struct{ S Secret }{s})
	slog.New(slog.NewTextHandler(&logged, nil)).Info("x", "secret", s)
	j, _ := json.Marshal(struct {
		S Secret
		P *Secret
	}{s, &s})
	texts := map[string]string{
		"%v": fmt.Sprintf("%v", s), "%s": fmt.Sprintf("%s", s), "%+v": fmt.Sprintf("%+v", s),
		"%#v": fmt.Sprintf("%#v", s), "%x": fmt.Sprintf("%x", s), "%q": fmt.Sprintf("%q", s), "%d": fmt.Sprintf("%d", s),
		"in a struct":            fmt.Sprintf("%+v %#v", struct{ s Secret }{s}, struct{ s Secret }{s}),
		"by pointer":             fmt.Sprintf("%v %+v", &s, &s),
		"slog":                   logged.String(),
		"json":                   string(j),
		"an error":               fmt.Errorf("with %v", s).Error(),
		"the zero secret's kind": Secret{}.String(),
	}
	for how, text := range texts {
		if l := leaks(text); l != nil {
			t.Errorf("%s shows %q: %s", how, l, text)
		}
	}
	if texts["%v"] != "whsec_[redacted]" {
		t.Errorf("%%v = %q, want whsec_[redacted]", texts["%v"])
	}
}

// TestSendNeverShowsASecret makes a Sender with a URL, a static header
// and a secret to hide, and fails it every way it can fail, against a
// receiver that echoes all of them: no text shows any.
func TestSendNeverShowsASecret(t *testing.T) {
	echo := func(status int) func(w http.ResponseWriter, r *http.Request) {
		return func(w http.ResponseWriter, r *http.Request) {
			if status >= 300 && status < 400 {
				w.Header().Set("Location", "https://relay-user-abc:pa55-w0rd-xyz@elsewhere/tok3n-abcdef/hooks?token=tok3n-abcdef")
			}
			w.WriteHeader(status)
			fmt.Fprintf(w, "bad request %s token=%s auth=%q secret=%s", r.URL.String(), r.URL.Query().Get("token"),
				strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), testSecret)
		}
	}
	const userinfo, query = "relay-user-abc:pa55-w0rd-xyz@", "?token=tok3n-abcdef&v=1"
	static := map[string]string{"Authorization": "Bearer hdr-s3cret-xyz", "X-Api-Key": longToken}
	sender := func(t *testing.T, u string, timeout time.Duration) *Sender {
		cfg := testConfig(u)
		cfg.Headers, cfg.Timeout = static, timeout
		return newSender(t, cfg)
	}
	hostOf := func(srvURL string) string { return strings.TrimPrefix(srvURL, "http://") }
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	for _, tc := range []struct {
		name    string
		answer  func(w http.ResponseWriter, r *http.Request)
		host    string // the receiver's, when not the test server's
		timeout time.Duration
	}{
		{name: "500", answer: echo(500)},
		{name: "400", answer: echo(400)},
		{name: "redirect", answer: echo(302)},
		{name: "a token cut by the read", answer: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadRequest)
			k := r.Header.Get("X-Api-Key")
			fmt.Fprintf(w, "key=%s key=%s", k, k)
		}},
		{name: "timeout", answer: func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, timeout: 100 * time.Millisecond},
		{name: "connection refused", host: closed},
		{name: "no such host", host: "no-such-host.invalid:80"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := newReceiver(t, tc.answer)
			host := tc.host
			if host == "" {
				host = hostOf(rc.srv.URL)
			}
			s := sender(t, "http://"+userinfo+host+"/hooks"+query, tc.timeout)
			r := s.Send(context.Background(), []Message{{ID: "1", Payload: []byte("{}")}})
			if r.Outcome == Delivered || r.Err == nil {
				t.Fatalf("result %+v: want a failure", r)
			}
			texts := map[string]string{
				"Err": r.Err.Error(), "result %+v": fmt.Sprintf("%+v", r), "result %#v": fmt.Sprintf("%#v", r),
				"sender %v": fmt.Sprintf("%v", s), "sender %+v": fmt.Sprintf("%+v %+v", s, *s), "sender %#v": fmt.Sprintf("%#v", s),
			}
			for how, text := range texts {
				if l := leaks(text); l != nil {
					t.Errorf("%s shows %q: %s", how, l, text)
				}
			}
			if !strings.HasPrefix(r.Err.Error(), "POST http://[redacted]@"+host+"/hooks?[redacted]: ") ||
				r.Status == 0 && strings.Count(r.Err.Error(), "/hooks") != 1 { // the answers quote it
				t.Errorf("Err %q does not show the URL redacted, once", r.Err)
			}
		})
	}
}

// TestConfigNeverShowsASecret prints a Config, and its problems.
func TestConfigNeverShowsASecret(t *testing.T) {
	c := Config{URL: "ftp://relay-user-abc:pa55-w0rd-xyz@partner.example/hooks?token=tok3n-abcdef",
		Headers: map[string]string{"Authorization": "Bearer hdr-s3cret-xyz", "X-Bad": "hdr-s3cret-xyz\n"}, SecretEnv: testSecret}
	for how, text := range map[string]string{
		"String": c.String(), "%v": fmt.Sprintf("%v", c), "%+v": fmt.Sprintf("%+v", c), "%#v": fmt.Sprintf("%#v", c),
		"Validate":   fmt.Sprint(c.Validate()),
		"unparsable": fmt.Sprint(Config{URL: "http://relay-user-abc:pa55-w0rd-xyz@a b/?token=tok3n-abcdef", SecretFile: "f"}.Validate()),
	} {
		if l := leaks(text); l != nil {
			t.Errorf("%s shows %q: %s", how, l, text)
		}
	}
	if got, want := c.String(), "webhook{url: ftp://[redacted]@partner.example/hooks?[redacted], headers: [Authorization X-Bad], secret_env: "; !strings.HasPrefix(got, want) {
		t.Errorf("String = %q, want it to start with %q", got, want)
	}
}

func TestShowURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://partner.example/hooks/wallet":           "https://partner.example/hooks/wallet",
		"https://partner.example:8443/a%20b?token=x&v=2": "https://partner.example:8443/a%20b?[redacted]",
		"https://user:pass@partner.example/":             "https://[redacted]@partner.example/",
		"https://token@partner.example/#frag":            "https://[redacted]@partner.example/",
		"http://[::1]:8080/?":                            "http://[::1]:8080/?[redacted]",
	} {
		u, err := url.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := showURL(u); got != want {
			t.Errorf("showURL(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestShowURLOfText(t *testing.T) {
	for in, want := range map[string]string{
		"https://u:p@partner.example/hooks?token=x": "https://[redacted]@partner.example/hooks?[redacted]",
		"https://partner example/?token=x":          "[redacted]",
		"partner.example/hooks?token=x":             "[redacted]",
		"":                                          "[redacted]",
	} {
		if got := ShowURL(in); got != want {
			t.Errorf("ShowURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCutPartial checks that an answer cut in the middle of a token shows
// none of it.
func TestCutPartial(t *testing.T) {
	masks := sortMasks([]string{"tok3n-abcdef", "v", "hdr-s3cret-xyz"})
	for in, want := range map[string]string{
		"error: tok3n-ab":     "error: ",
		"error: tok3n-abcd":   "error: ",
		"error: t":            "error: ",
		"error: hdr-s3":       "error: ",
		"error: done":         "error: done",
		"error: tok3n-abcdef": "error: tok3n-abcdef", // whole: mask's
	} {
		if got := string(cutPartial([]byte(in), masks)); got != want {
			t.Errorf("cutPartial(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestExcerpt(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"  short\n", 200, "short"},
		{"a\r\n\tb \x00 c\xff", 200, "a b c"},
		{"<html>\n  <body>error</body>\n</html>", 200, "<html> <body>error</body> </html>"},
		{strings.Repeat("x", 300), 200, strings.Repeat("x", 200) + "…"},
		{"héllo wörld", 5, "héll…"},
		{"", 200, ""},
	} {
		if got := excerpt([]byte(tc.in), tc.max); got != tc.want {
			t.Errorf("excerpt(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}
