package pgerr

import (
	"errors"
	"net/url"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// The password forms of a connection string that Redact masks.
var (
	// A keyword/value password: spaces may surround "=", and the value is
	// quoted (backslash escapes; a doubled quote is taken as part of the
	// value, so nothing after it shows) or runs to the next space. An
	// unterminated quote runs to the end of the string.
	kvPassword = regexp.MustCompile(`(?is)((?:^|\s)(?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.|'')*(?:'|$)|(?:[^\s\\]|\\.)*)`)
	// A password keyword without "=" (libpq refuses it, and the parse error
	// quotes the string): the next word is most likely the password.
	kvPasswordNoEquals = regexp.MustCompile(`(?i)((?:^|\s)(?:ssl)?password\s+)([^\s=]\S*)`)
	// A password in a URL's query.
	urlQueryPassword = regexp.MustCompile(`(?i)([?&](?:ssl)?password=)[^&#]*`)
)

// Redact returns connString with every password it can find replaced by
// xxxxx, for messages and logs. It reads both forms PostgreSQL accepts and
// does not need the string to parse: in a URL (postgres:// or
// postgresql://) the password of the user information, up to the last "@",
// and the password and sslpassword query parameters; in the keyword/value
// form the values of password and sslpassword, with or without spaces
// around "=", quoted or not. Where a malformed string leaves the end of a
// value unclear, it masks too much rather than too little.
func Redact(connString string) string {
	s := connString
	if isURL(s) {
		s = urlUserPassword(s, ":xxxxx")
		s = urlQueryPassword.ReplaceAllString(s, "${1}xxxxx")
		s = mapQueryPasswords(s, func(name string) (string, bool) { return name + "=xxxxx", true })
	}
	s = kvPassword.ReplaceAllString(s, "${1}xxxxx")
	return kvPasswordNoEquals.ReplaceAllString(s, "${1}xxxxx")
}

// WithoutPasswords returns connString with every password [Redact] would
// mask left out, keyword and all (the user information's password, the
// password and sslpassword query parameters or keywords), and reports
// whether it left one out: for a command line printed to be run again,
// which then takes the password from PGPASSWORD (PGSSLPASSWORD), the
// password file or the environment variable of the URL. Everything else
// (sslkey and other paths, options) stays as it was.
func WithoutPasswords(connString string) (string, bool) {
	s := connString
	if isURL(s) {
		s = urlUserPassword(s, "")
		s = withoutQueryPasswords(s)
	} else {
		s = kvPassword.ReplaceAllString(s, "")
		s = strings.TrimSpace(kvPasswordNoEquals.ReplaceAllString(s, ""))
	}
	return s, s != connString
}

// isURL reports whether s is a connection string of the URL form.
func isURL(s string) bool {
	lower := strings.ToLower(s)
	return strings.HasPrefix(lower, "postgres://") || strings.HasPrefix(lower, "postgresql://")
}

// urlUserPassword returns the URL s with the password of its user
// information (after the first ":" before the last "@") replaced by with
// (":xxxxx" masks it, "" leaves it out).
func urlUserPassword(s, with string) string {
	scheme := strings.Index(s, "://") + len("://")
	if at := strings.LastIndex(s[scheme:], "@"); at >= 0 {
		userinfo := s[scheme : scheme+at]
		if colon := strings.Index(userinfo, ":"); colon >= 0 {
			s = s[:scheme+colon] + with + s[scheme+at:]
		}
	}
	return s
}

// withoutQueryPasswords returns the URL s without its password and
// sslpassword query parameters (any case), the others in their order.
func withoutQueryPasswords(s string) string {
	return mapQueryPasswords(s, func(string) (string, bool) { return "", false })
}

// mapQueryPasswords returns the URL s with each of its password and
// sslpassword query parameters (by name decoded as pgconn decodes it, in
// any case: pass%77ord too) replaced by what with returns for the name as
// written, or left out when it reports false; the others in their order.
func mapQueryPasswords(s string, with func(name string) (string, bool)) string {
	q := strings.Index(s, "?")
	if q < 0 {
		return s
	}
	query, fragment := s[q+1:], ""
	if h := strings.Index(query, "#"); h >= 0 {
		query, fragment = query[:h], query[h:]
	}
	var kept []string
	for _, p := range strings.Split(query, "&") {
		name, _, _ := strings.Cut(p, "=")
		decoded := name
		if n, err := url.QueryUnescape(name); err == nil {
			decoded = n
		}
		if strings.EqualFold(decoded, "password") || strings.EqualFold(decoded, "sslpassword") {
			if p, ok := with(name); ok {
				kept = append(kept, p)
			}
			continue
		}
		kept = append(kept, p)
	}
	if len(kept) == 0 {
		return s[:q] + fragment
	}
	return s[:q+1] + strings.Join(kept, "&") + fragment
}

// Parse returns err, an error from parsing a connection string (pgconn,
// pgx or pgxpool ParseConfig), with the connection string in its message
// masked by [Redact]. pgconn masks passwords itself, but misses the
// keyword/value forms with spaces around "=" (password = secret) and
// quoted values with escapes. Other errors are returned as they are.
func Parse(err error) error {
	var pce *pgconn.ParseConfigError
	if !errors.As(err, &pce) {
		return err
	}
	redacted := *pce // the message and cause are unexported: copy them
	redacted.ConnString = Redact(pce.ConnString)
	return &redacted
}

// Describe returns, for a log line or a message, what connString connects
// to as a URL with no secret in it: the user, every host with its port,
// and the database (postgres://relay@db1:5432,db2:5432/app). The
// parameters are left out; a string that does not parse is described as
// "(unparsable connection string)".
func Describe(connString string) string {
	cfg, err := pgconn.ParseConfig(connString)
	if err != nil {
		return "(unparsable connection string)"
	}
	u := url.URL{Scheme: "postgres", User: url.User(cfg.User), Host: strings.Join(Hosts(cfg), ","), Path: "/" + cfg.Database}
	return u.String()
}
