package webhook

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	valid := func() Config {
		return Config{URL: "https://partner.example/hooks/wallet", SecretFile: "/etc/cdc-relay/partner-secret"}
	}
	for _, tc := range []struct {
		name   string
		change func(*Config)
		want   []string // "key: problem" of each problem, in part; none: valid
	}{
		{name: "valid", change: func(*Config) {}},
		{name: "everything set", change: func(c *Config) {
			c.Method, c.Timeout, c.BatchSize = "PUT", 30*time.Second, 100
			c.Headers = map[string]string{"Authorization": "Bearer abc", "X-Tenant": "7", "User-Agent": "cdc-relay"}
			c.TLS = TLS{CAFile: "ca.pem", CertFile: "c.pem", KeyFile: "k.pem", ServerName: "partner.example"}
		}},
		{name: "http", change: func(c *Config) { c.URL = "http://receiver:8080/hooks" }},
		{name: "no url", change: func(c *Config) { c.URL = "" }, want: []string{"url: missing: set the receiver's URL"}},
		{name: "relative", change: func(c *Config) { c.URL = "partner.example/hooks" }, want: []string{"url: has no scheme"}},
		{name: "scheme", change: func(c *Config) { c.URL = "ftp://partner.example/x?token=secret-token" },
			want: []string{"url: ftp://partner.example/x?[redacted] is not an http or https URL"}},
		{name: "no host", change: func(c *Config) { c.URL = "https:///hooks" }, want: []string{"url: https:///hooks has no host"}},
		{name: "unparsable", change: func(c *Config) { c.URL = "https://partner example/?token=secret-token" },
			want: []string{`url: cannot be read as a URL (invalid character " " in host name)`}},
		{name: "fragment", change: func(c *Config) { c.URL = "https://partner.example/hooks#part" },
			want: []string{"url: https://partner.example/hooks has a fragment"}},
		{name: "method", change: func(c *Config) { c.Method = "post" }, want: []string{`method: "post" is not a method`}},
		{name: "GET", change: func(c *Config) { c.Method = "GET" }, want: []string{`method: "GET" is not a method a webhook is sent with: want POST`}},
		{name: "headers", change: func(c *Config) {
			c.Headers = map[string]string{"webhook-id": "x", "Content-Type": "text/plain", "bad name": "x",
				"X-Token": "a\nb", "x-tenant": "1", "X-Tenant": "2", "Host": "elsewhere"}
		}, want: []string{
			"headers: Content-Type is set by the relay itself", "headers: Host is set by the relay itself",
			`headers: the value of X-Token holds a control character`, `headers: "bad name" is not an HTTP header name`,
			"headers: webhook-id is set by the relay itself", "headers: x-tenant is set twice",
		}},
		{name: "timeout", change: func(c *Config) { c.Timeout = -time.Second }, want: []string{"timeout: -1s is negative"}},
		{name: "long timeout", change: func(c *Config) { c.Timeout = 6 * time.Minute }, want: []string{"timeout: 6m0s is over 5m0s"}},
		{name: "tls over http", change: func(c *Config) { c.URL = "http://receiver/hooks"; c.TLS.CAFile = "ca.pem" },
			want: []string{"tls: is set but url http://receiver/hooks is http"}},
		{name: "cert alone", change: func(c *Config) { c.TLS.CertFile = "c.pem" }, want: []string{"tls.cert_file: needs tls.key_file"}},
		{name: "key alone", change: func(c *Config) { c.TLS.KeyFile = "k.pem" }, want: []string{"tls.key_file: needs tls.cert_file"}},
		{name: "no secret", change: func(c *Config) { c.SecretFile = "" }, want: []string{"secret_file: missing: every request is signed"}},
		{name: "two secrets", change: func(c *Config) { c.SecretEnv = "PARTNER_SECRET" }, want: []string{"secret_env: is set beside secret_file"}},
		{name: "the secret as its file", change: func(c *Config) { c.SecretFile = testSecret },
			want: []string{"secret_file: holds a secret, not a file name"}},
		{name: "the secret as its variable", change: func(c *Config) { c.SecretFile, c.SecretEnv = "", testSecret },
			want: []string{"secret_env: holds a secret, not the name of an environment variable"}},
		{name: "variable name", change: func(c *Config) { c.SecretFile, c.SecretEnv = "", "1PARTNER-SECRET" },
			want: []string{`secret_env: "1PARTNER-SECRET" is not an environment variable's name`}},
		{name: "batch", change: func(c *Config) { c.BatchSize = -1 }, want: []string{"batch_size: -1 is not from 0 to 1000"}},
		{name: "big batch", change: func(c *Config) { c.BatchSize = 1001 }, want: []string{"batch_size: 1001 is not from 0 to 1000"}},
		{name: "many", change: func(c *Config) { c.URL, c.Method, c.SecretFile = "", "DELETE", "" },
			want: []string{"url: missing", `method: "DELETE"`, "secret_file: missing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			tc.change(&c)
			err := c.Validate()
			var got []error
			if err != nil {
				got = err.(interface{ Unwrap() []error }).Unwrap()
			}
			if len(got) != len(tc.want) {
				t.Fatalf("problems:\n%v\nwant %d: %q", err, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				var ke *KeyError
				if !errors.As(got[i], &ke) {
					t.Errorf("problem %d %v is no *KeyError", i, got[i])
				}
				if !strings.Contains(got[i].Error(), w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, got[i], w)
				}
				if strings.Contains(got[i].Error(), "secret-token") || strings.Contains(got[i].Error(), testSecret) {
					t.Errorf("problem %d shows a secret: %q", i, got[i])
				}
			}
		})
	}
}

func TestReadSecret(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good, bad := write("good", testSecret+"\n"), write("bad", "whsec_c2hvcnQ=\n")
	t.Setenv("CDC_RELAY_TEST_GOOD", testSecret)
	t.Setenv("CDC_RELAY_TEST_BAD", "c2VjcmV0LW9mLXRoZS13ZWJob29rLXRlc3RzLTMyYnk=")
	for _, tc := range []struct {
		cfg  Config
		want string // in the error; "" for none
	}{
		{Config{SecretFile: good}, ""},
		{Config{SecretEnv: "CDC_RELAY_TEST_GOOD"}, ""},
		{Config{SecretFile: bad}, "secret_file: " + bad + ": the signing secret holds 5 bytes"},
		{Config{SecretFile: filepath.Join(dir, "missing")}, "secret_file: cannot read the secret: open "},
		{Config{SecretEnv: "CDC_RELAY_TEST_BAD"}, "secret_env: $CDC_RELAY_TEST_BAD: the signing secret does not start with whsec_"},
		{Config{SecretEnv: "CDC_RELAY_TEST_UNSET"}, "secret_env: the environment variable CDC_RELAY_TEST_UNSET is not set"},
	} {
		s, err := tc.cfg.ReadSecret()
		switch {
		case tc.want == "" && (err != nil || s.IsZero()):
			t.Errorf("%v: %v", tc.cfg, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: err %v, want %q", tc.cfg, err, tc.want)
		case err != nil && strings.Contains(err.Error(), "c2VjcmV0"):
			t.Errorf("%v: err %q shows the secret", tc.cfg, err)
		}
	}
}

func TestCheck(t *testing.T) {
	f := newTLSFixture(t)
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte(testSecret), 0o600)
	// A resolver that reaches no DNS server: only names that need none
	// (localhost from /etc/hosts, an IP address) resolve.
	offline := &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("no DNS in this test")
	}}
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string
	}{
		{name: "ip", cfg: Config{URL: "https://127.0.0.1:8443/hooks", SecretFile: secret,
			TLS: TLS{CAFile: f.caFile, CertFile: f.clientCert, KeyFile: f.clientKey}}},
		{name: "localhost", cfg: Config{URL: "http://localhost:8080/hooks", SecretFile: secret}},
		{name: "unresolved", cfg: Config{URL: "https://partner.example/hooks?token=secret-token", SecretFile: secret},
			want: []string{"url: https://partner.example/hooks?[redacted]: the receiver's host partner.example does not resolve"}},
		{name: "everything wrong", cfg: Config{URL: "https://partner.example/hooks", SecretFile: f.caFile,
			TLS: TLS{CAFile: secret, CertFile: f.clientCert, KeyFile: f.caFile}},
			want: []string{"secret_file: " + f.caFile + ": the signing secret does not start with whsec_",
				"tls.ca_file: " + secret + " holds no PEM certificate", "url: https://partner.example/hooks: the receiver's host"}},
		{name: "invalid", cfg: Config{URL: "https://partner.example/hooks"}, want: []string{"secret_file: missing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.check(context.Background(), offline, noProxy)
			var got []error
			if err != nil {
				got = err.(interface{ Unwrap() []error }).Unwrap()
			}
			if len(got) != len(tc.want) {
				t.Fatalf("problems:\n%v\nwant %d: %q", err, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i].Error(), w) || strings.Contains(got[i].Error(), "secret-token") {
					t.Errorf("problem %d = %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}

// TestCheckResolvesTheProxy checks that with a proxy for the URL, Check
// resolves the proxy's host, which the relay connects to, not the
// receiver's.
func TestCheckResolvesTheProxy(t *testing.T) {
	proxy, _ := url.Parse("http://proxy.internal:3128")
	offline := &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("no DNS in this test")
	}}
	err := Config{URL: "https://partner.example/hooks"}.resolve(context.Background(), offline, http.ProxyURL(proxy))
	if err == nil || !strings.Contains(err.Error(), "the host of the proxy that HTTPS_PROXY or HTTP_PROXY names for it proxy.internal does not resolve") {
		t.Fatalf("err = %v", err)
	}
}

func noProxy(*http.Request) (*url.URL, error) { return nil, nil }
