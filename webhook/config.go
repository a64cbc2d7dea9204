package webhook

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"time"
)

// Config is one webhook publisher's settings, as the config file's
// publishers.<name>.webhook section gives them. A field left zero takes
// its default.
type Config struct {
	// URL is the receiver's absolute http or https URL. A token in its
	// query string or user information is never shown.
	URL string
	// Method is the request method, POST, PUT or PATCH; "" is POST.
	Method string
	// Headers are static headers sent with every request, name → value;
	// never one the package sets itself ([reservedHeaders]). Their values
	// are never shown (an Authorization header is common).
	Headers map[string]string
	// Timeout bounds each request, from connecting to reading the answer;
	// 0 is [DefaultTimeout].
	Timeout time.Duration
	// TLS is the connection's TLS, for an https URL.
	TLS TLS
	// SecretFile names a file holding the signing secret, as
	// whsec_<base64>; SecretEnv names the environment variable holding it.
	// Exactly one is set: the secret itself is never in the config.
	SecretFile, SecretEnv string
	// BatchSize is the most events a request carries: 0 or 1 sends each
	// event alone, as its payload; N > 1 sends a JSON array of up to N.
	BatchSize int
}

// TLS is a webhook's TLS settings; each empty field takes the default.
type TLS struct {
	// CAFile is a PEM file of the CA certificates that sign the
	// receiver's; "" trusts the system's roots.
	CAFile string
	// CertFile and KeyFile are the client certificate (PEM, followed by
	// its intermediates) and its private key, for a receiver that requires
	// one; both or neither.
	CertFile, KeyFile string
	// ServerName is the name the receiver's certificate must be valid
	// for; "" is the URL's host.
	ServerName string
}

// The defaults and bounds of a Config.
const (
	DefaultMethod  = http.MethodPost
	DefaultTimeout = 10 * time.Second
	// MaxTimeout bounds Timeout: a receiver that takes longer holds the
	// events behind each of its requests for as long.
	MaxTimeout = 5 * time.Minute
	// MaxBatchSize bounds BatchSize.
	MaxBatchSize = 1000
)

// methods are the request methods a Config may name.
var methods = []string{http.MethodPost, http.MethodPut, http.MethodPatch}

// reservedHeaders are the headers, in lower case, that the package or
// Go's HTTP client sets on every request: neither a static header nor a
// mapped one may set them.
var reservedHeaders = []string{
	"webhook-id", "webhook-timestamp", "webhook-signature",
	"content-type", "content-length", "content-encoding", "transfer-encoding",
	"host", "connection", "keep-alive", "proxy-connection", "te", "trailer", "upgrade", "expect",
}

// reserved reports whether name is one of reservedHeaders, in any case.
func reserved(name string) bool {
	return slices.ContainsFunc(reservedHeaders, func(r string) bool { return strings.EqualFold(r, name) })
}

// KeyError is one problem of a Config: Key is its key in the config
// file's webhook section ("url", "tls.ca_file", "headers", …), for the
// caller to place the problem; Problem says what is wrong and what to do.
type KeyError struct {
	Key, Problem string
}

// Error is "key: problem".
func (e *KeyError) Error() string { return e.Key + ": " + e.Problem }

// Validate checks everything that can be checked without I/O, and
// returns every problem found, each a [*KeyError] (errors.Join'ed), or
// nil. No problem shows the URL's user information or query string, a
// header's value, or the secret.
func (c Config) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, &KeyError{Key: key, Problem: fmt.Sprintf(format, args...)})
	}
	u := c.validateURL(add)
	if c.Method != "" && !slices.Contains(methods, c.Method) {
		add("method", "%q is not a method a webhook is sent with: want POST (the default), PUT or PATCH, in capitals", c.Method)
	}
	c.validateHeaders(add)
	switch {
	case c.Timeout < 0:
		add("timeout", "%s is negative: give the longest a request may take, as 10s (the default)", c.Timeout)
	case c.Timeout > MaxTimeout:
		add("timeout", "%s is over %s: a slow receiver holds the events behind each request as long; "+
			"the specification recommends 15s to 30s", c.Timeout, MaxTimeout)
	}
	c.validateTLS(u, add)
	c.validateSecret(add)
	if c.BatchSize < 0 || c.BatchSize > MaxBatchSize {
		add("batch_size", "%d is not from 0 to %d: 0 or 1 sends each event alone, N a JSON array of up to N events",
			c.BatchSize, MaxBatchSize)
	}
	return errors.Join(errs...)
}

// validateURL checks URL and returns it parsed, or nil.
func (c Config) validateURL(add func(key, format string, args ...any)) *url.URL {
	if c.URL == "" {
		add("url", "missing: set the receiver's URL, as https://partner.example/hooks")
		return nil
	}
	u, err := url.Parse(c.URL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error's text holds the whole URL, query and all
		}
		add("url", "cannot be read as a URL (%v): give an absolute URL, as https://partner.example/hooks", err)
		return nil
	}
	switch {
	case u.Scheme == "":
		add("url", "has no scheme: give an absolute URL, as https://partner.example/hooks")
		return nil
	case u.Scheme != "http" && u.Scheme != "https":
		add("url", "%s is not an http or https URL: give an absolute URL, as https://partner.example/hooks", showURL(u))
		return nil
	case u.Host == "" || u.Hostname() == "":
		add("url", "%s has no host: give an absolute URL, as https://partner.example/hooks", showURL(u))
		return nil
	case u.Fragment != "" || strings.Contains(c.URL, "#"):
		add("url", "%s has a fragment (#…), which is never sent to the receiver: remove it", showURL(u))
	}
	return u
}

// validateHeaders checks Headers.
func (c Config) validateHeaders(add func(key, format string, args ...any)) {
	names := make([]string, 0, len(c.Headers))
	for name := range c.Headers {
		names = append(names, name)
	}
	sort.Strings(names)
	var seen []string
	for _, name := range names {
		switch {
		case !validName(name):
			add("headers", "%q is not an HTTP header name: use letters, digits and !#$%%&'*+-.^_`|~ only", name)
		case reserved(name):
			add("headers", "%s is set by the relay itself on every request (%s): remove it", name,
				"the Standard Webhooks headers, content-type from the event, and HTTP's own")
		case slices.ContainsFunc(seen, func(s string) bool { return strings.EqualFold(s, name) }):
			add("headers", "%s is set twice, in two cases: HTTP header names ignore case; keep one", name)
		case !validValue([]byte(c.Headers[name])):
			add("headers", "the value of %s holds a control character (a newline?), which no HTTP header may: remove it", name)
		}
		seen = append(seen, name)
	}
}

// validateTLS checks TLS against u, the URL (nil when it is wrong).
func (c Config) validateTLS(u *url.URL, add func(key, format string, args ...any)) {
	t := c.TLS
	if u != nil && u.Scheme == "http" && t != (TLS{}) {
		add("tls", "is set but url %s is http: use an https URL, or remove tls", showURL(u))
	}
	switch {
	case t.CertFile != "" && t.KeyFile == "":
		add("tls.cert_file", "needs tls.key_file: a client certificate goes with its private key")
	case t.KeyFile != "" && t.CertFile == "":
		add("tls.key_file", "needs tls.cert_file: a private key goes with its client certificate")
	}
}

// validateSecret checks SecretFile and SecretEnv.
func (c Config) validateSecret(add func(key, format string, args ...any)) {
	switch {
	case c.SecretFile == "" && c.SecretEnv == "":
		add("secret_file", "missing: every request is signed; set secret_file (a file holding the secret, whsec_<base64>) "+
			"or secret_env (the environment variable holding it)")
	case c.SecretFile != "" && c.SecretEnv != "":
		add("secret_env", "is set beside secret_file: the secret comes from one; remove one")
	case looksLikeSecret(c.SecretFile):
		add("secret_file", "holds a secret, not a file name: put the secret in a file readable by the relay only and name the file")
	case looksLikeSecret(c.SecretEnv):
		add("secret_env", "holds a secret, not the name of an environment variable: set a variable to the secret and name the variable")
	case c.SecretEnv != "" && !validEnvName(c.SecretEnv):
		add("secret_env", "%q is not an environment variable's name: use letters, digits and _, not starting with a digit, "+
			"as CDC_RELAY_PARTNER_SECRET", c.SecretEnv)
	}
}

// ReadSecret reads the signing secret from SecretFile or SecretEnv and
// parses it ([ParseSecret]). Its errors name the file or the variable,
// never the secret.
func (c Config) ReadSecret() (Secret, error) {
	var raw, from string
	switch {
	case c.SecretFile != "":
		b, err := os.ReadFile(c.SecretFile)
		if err != nil {
			return Secret{}, &KeyError{Key: "secret_file", Problem: fmt.Sprintf("cannot read the secret: %v", err)}
		}
		raw, from = string(b), "secret_file"
	case c.SecretEnv != "":
		v, ok := os.LookupEnv(c.SecretEnv)
		if !ok {
			return Secret{}, &KeyError{Key: "secret_env", Problem: fmt.Sprintf(
				"the environment variable %s is not set: set it to the secret, whsec_<base64>", c.SecretEnv)}
		}
		raw, from = v, "secret_env"
	default:
		return Secret{}, &KeyError{Key: "secret_file", Problem: "missing: set secret_file or secret_env"}
	}
	s, err := ParseSecret(raw)
	if err != nil {
		where := c.SecretFile
		if from == "secret_env" {
			where = "$" + c.SecretEnv
		}
		return Secret{}, &KeyError{Key: from, Problem: fmt.Sprintf("%s: %v", where, err)}
	}
	return s, nil
}

// tlsConfig reads the TLS files into a client configuration (TLS 1.2 at
// least).
func (c Config) tlsConfig() (*tls.Config, error) {
	t := c.TLS
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, &KeyError{Key: "tls.ca_file", Problem: err.Error()}
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, &KeyError{Key: "tls.ca_file", Problem: fmt.Sprintf(
				"%s holds no PEM certificate (-----BEGIN CERTIFICATE-----): name the CA certificates that sign the receiver's", t.CAFile)}
		}
	}
	if t.CertFile != "" || t.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, &KeyError{Key: "tls.cert_file", Problem: fmt.Sprintf(
				"%s and tls.key_file %s: %v: name a PEM certificate and its private key", t.CertFile, t.KeyFile, err)}
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// String describes the settings for a log line: the URL as [showURL]
// shows it, the headers' names without their values, and where the secret
// comes from.
func (c Config) String() string {
	var b strings.Builder
	b.WriteString("webhook{url: ")
	if c.URL != "" {
		b.WriteString(ShowURL(c.URL))
	}
	if c.Method != "" {
		fmt.Fprintf(&b, ", method: %s", c.Method)
	}
	if len(c.Headers) > 0 {
		names := make([]string, 0, len(c.Headers))
		for n := range c.Headers {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(&b, ", headers: [%s]", strings.Join(names, " "))
	}
	if c.Timeout != 0 {
		fmt.Fprintf(&b, ", timeout: %s", c.Timeout)
	}
	for _, s := range []struct{ key, v string }{{"secret_file", c.SecretFile}, {"secret_env", c.SecretEnv}} {
		switch {
		case looksLikeSecret(s.v): // the mistake Validate refuses: the secret in its place
			fmt.Fprintf(&b, ", %s: %s", s.key, redacted)
		case s.v != "":
			fmt.Fprintf(&b, ", %s: %s", s.key, s.v)
		}
	}
	if c.BatchSize > 1 {
		fmt.Fprintf(&b, ", batch_size: %d", c.BatchSize)
	}
	b.WriteString("}")
	return b.String()
}

// GoString is String, so that %#v hides the header values too.
func (c Config) GoString() string { return c.String() }

// validName reports whether name is an HTTP header name: one or more of
// RFC 9110's token characters.
func validName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !tokenChar(name[i]) {
			return false
		}
	}
	return true
}

// tokenChar reports whether b is one of RFC 9110's tchar.
func tokenChar(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", b) >= 0
}

// validValue reports whether v may be an HTTP header's value as Go's
// client sends it: no control character but the tab.
func validValue(v []byte) bool {
	for _, b := range v {
		if b < ' ' && b != '\t' || b == 0x7f {
			return false
		}
	}
	return true
}

// looksLikeSecret reports whether s, a file or variable name, is a secret
// instead.
func looksLikeSecret(s string) bool { return strings.HasPrefix(strings.TrimSpace(s), SecretPrefix) }

// validEnvName reports whether s is a portable environment variable name.
func validEnvName(s string) bool {
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !(b == '_' || 'A' <= b && b <= 'Z' || 'a' <= b && b <= 'z' || i > 0 && '0' <= b && b <= '9') {
			return false
		}
	}
	return s != ""
}
