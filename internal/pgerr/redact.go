package pgerr

import (
	"errors"
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
	if lower := strings.ToLower(s); strings.HasPrefix(lower, "postgres://") || strings.HasPrefix(lower, "postgresql://") {
		scheme := strings.Index(s, "://") + len("://")
		if at := strings.LastIndex(s[scheme:], "@"); at >= 0 {
			userinfo := s[scheme : scheme+at]
			if colon := strings.Index(userinfo, ":"); colon >= 0 {
				s = s[:scheme+colon] + ":xxxxx" + s[scheme+at:]
			}
		}
		s = urlQueryPassword.ReplaceAllString(s, "${1}xxxxx")
	}
	s = kvPassword.ReplaceAllString(s, "${1}xxxxx")
	return kvPasswordNoEquals.ReplaceAllString(s, "${1}xxxxx")
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
