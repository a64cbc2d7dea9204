package pgerr_test

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdc-relay/cdc-relay/internal/pgerr"
)

// TestRedact: every form of password PostgreSQL accepts is masked, parsed
// or not, and the rest of the string stays readable.
func TestRedact(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"url", "postgres://relay:s3cret@db:5432/app", "postgres://relay:xxxxx@db:5432/app"},
		{"postgresql url", "postgresql://relay:s3cret@db/app", "postgresql://relay:xxxxx@db/app"},
		{"url in capitals", "POSTGRES://relay:s3cret@db/app", "POSTGRES://relay:xxxxx@db/app"},
		{"url without password", "postgres://relay@db/app?sslmode=disable", "postgres://relay@db/app?sslmode=disable"},
		{"url with @ in the password", "postgres://relay:s3@cret@db/app", "postgres://relay:xxxxx@db/app"},
		{"url with : in the password", "postgres://relay:s3:cret@db/app", "postgres://relay:xxxxx@db/app"},
		{"url with a space in the password", "postgres://relay:s3 cret@db/app", "postgres://relay:xxxxx@db/app"},
		{"url query password", "postgres://relay@db/app?password=s3cret&sslmode=disable", "postgres://relay@db/app?password=xxxxx&sslmode=disable"},
		{"url query sslpassword", "postgres://relay@db/app?sslpassword=s3cret", "postgres://relay@db/app?sslpassword=xxxxx"},
		{"url query, escaped name", "postgres://relay@db/app?pass%77ord=s3cret&sslmode=disable", "postgres://relay@db/app?pass%77ord=xxxxx&sslmode=disable"},
		{"url with both", "postgres://relay:s3cret@db/app?port=x&Password=s3cret", "postgres://relay:xxxxx@db/app?port=x&Password=xxxxx"},
		{"keyword/value", "host=db password=s3cret dbname=app", "host=db password=xxxxx dbname=app"},
		{"spaces around =", "host=db password = s3cret dbname=app", "host=db password = xxxxx dbname=app"},
		{"space before =", "host=db password =s3cret dbname=app", "host=db password =xxxxx dbname=app"},
		{"space after =, quoted", "host=db password= 's3 cret' dbname=app", "host=db password= xxxxx dbname=app"},
		{"quoted", "host=db password='s3 cret' dbname=app", "host=db password=xxxxx dbname=app"},
		{"quoted with an escaped quote", `host=db password='s3\' cret' dbname=app`, "host=db password=xxxxx dbname=app"},
		{"quoted with a doubled quote", "host=db password='s3'' cret' dbname=app", "host=db password=xxxxx dbname=app"},
		{"escaped space", `host=db password=s3\ cret dbname=app`, "host=db password=xxxxx dbname=app"},
		{"unterminated quote", "host=db password='s3 cret dbname=app", "host=db password=xxxxx"},
		{"empty", "host=db password= dbname=app", "host=db password= xxxxx"},
		{"empty quoted", "host=db password='' dbname=app", "host=db password=xxxxx dbname=app"},
		{"first", "password=s3cret host=db", "password=xxxxx host=db"},
		{"tab and newline", "host=db\tpassword\t=\ts3cret\ndbname=app", "host=db\tpassword\t=\txxxxx\ndbname=app"},
		{"sslpassword", "host=db sslpassword = s3cret", "host=db sslpassword = xxxxx"},
		{"keyword in capitals", "host=db PASSWORD=s3cret", "host=db PASSWORD=xxxxx"},
		{"no = after password", "host=db password s3cret dbname=app", "host=db password xxxxx dbname=app"},
		{"passfile is a path", "host=db passfile=/etc/pgpass", "host=db passfile=/etc/pgpass"},
		{"a value that says password", "host=db application_name=password", "host=db application_name=password"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := pgerr.Redact(tt.in)
			if got != tt.want {
				t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
			}
			for _, secret := range []string{"s3cret", "cret", "s3"} {
				if strings.Contains(got, secret) {
					t.Errorf("Redact(%q) = %q: %q shows", tt.in, got, secret)
				}
			}
		})
	}
}

// TestParse: the message of a connection string that does not parse
// names the string without its password, including the forms pgconn
// itself leaves readable.
func TestParse(t *testing.T) {
	tests := []struct {
		name, in string
		want     string // in the message
	}{
		{"spaces around =", "host=db user=relay password = s3cret port=x", "invalid port"},
		{"quoted after a space", "host=db user=relay password= 's3 cret' port=x", "invalid port"},
		{"escaped quote", `host=db password='s3\' cret' port=x`, "invalid port"},
		{"url", "postgres://relay:s3cret@db:x/app", "invalid port"},
		{"pool setting", "postgres://relay:s3cret@db/app?pool_ping_timeout=x", "pool_ping_timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for parser, parse := range map[string]func(string) error{
				"pgconn":  func(s string) error { _, err := pgconn.ParseConfig(s); return err },
				"pgxpool": func(s string) error { _, err := pgxpool.ParseConfig(s); return err },
			} {
				raw := parse(tt.in)
				if raw == nil {
					if parser == "pgconn" && strings.Contains(tt.in, "pool_") {
						continue // a pool setting is pgxpool's
					}
					t.Fatalf("%s parsed %q", parser, tt.in)
				}
				msg := pgerr.Parse(raw).Error()
				if !strings.Contains(msg, tt.want) || !strings.Contains(msg, "db") {
					t.Errorf("%s: %q lacks %q or the host", parser, msg, tt.want)
				}
				if strings.Contains(msg, "cret") {
					t.Errorf("%s: %q shows the password", parser, msg)
				}
			}
		})
	}
}

// TestDescribe: a connection string is described by its user, hosts and
// database, never a password.
func TestDescribe(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://relay:s3cret@db:5432/app":                                           "postgres://relay@db:5432/app",
		"postgres://relay@db/app?password=s3cret&sslpassword=s3cret":                    "postgres://relay@db:5432/app",
		"host=db user=relay password=s3cret dbname=app port=6543":                       "postgres://relay@db:6543/app",
		"host=db user=relay password = s3cret dbname=app":                               "postgres://relay@db:5432/app",
		"host=db user=relay password= 's3 cret' dbname=app":                             "postgres://relay@db:5432/app",
		`host=db user=relay password ='s3\' cret' dbname=app`:                           "postgres://relay@db:5432/app",
		"host=db user=relay password = s3cret port=x":                                   "(unparsable connection string)",
		"postgres://relay:s3cret@[::1]:5433/app?sslmode=disable":                        "postgres://relay@[::1]:5433/app",
		"postgres://relay:s3cret@db1:5432,db2:5433/app?target_session_attrs=read-write": "postgres://relay@db1:5432,db2:5433/app",
		"host=db1,db2 port=5432,6543 user=relay password=s3cret dbname=app":             "postgres://relay@db1:5432,db2:6543/app",
	} {
		got := pgerr.Describe(in)
		if got != want || strings.Contains(got, "s3cret") {
			t.Errorf("pgerr.Describe(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestWithoutPasswords: every password Redact masks is left out, with its
// keyword, in each form (user information, query parameters, keyword/value,
// several hosts); other parameters and paths stay as they were.
func TestWithoutPasswords(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"url", "postgres://u:s3cret@h/db", "postgres://u@h/db"},
		{"url query", "postgres://u:s3cret@h/db?password=s3cret&sslpassword=s3cret", "postgres://u@h/db"},
		{"url query kept around", "postgres://u@h/db?sslmode=verify-full&PASSWORD=s3cret&sslkey=/etc/k.key&sslpassword=s3cret&application_name=a#f",
			"postgres://u@h/db?sslmode=verify-full&sslkey=/etc/k.key&application_name=a#f"},
		{"url query escaped name", "postgres://u@h/db?pass%77ord=s3cret&sslmode=disable", "postgres://u@h/db?sslmode=disable"},
		{"multi-host", "postgresql://u:s3cret@h1:5432,h2:5433/db?target_session_attrs=read-write&password=s3cret",
			"postgresql://u@h1:5432,h2:5433/db?target_session_attrs=read-write"},
		{"url without one", "postgres://u@h/db?sslmode=disable", "postgres://u@h/db?sslmode=disable"},
		{"keyword/value", "host=h user=u password=s3cret dbname=db", "host=h user=u dbname=db"},
		{"keyword/value, both, quoted", "password = 's3 cret' host=h1,h2 sslpassword=s3cret sslkey=/k dbname=db", "host=h1,h2 sslkey=/k dbname=db"},
		{"no = after password", "host=h password s3cret dbname=db", "host=h dbname=db"},
		{"passfile is a path", "host=h passfile=/etc/pgpass", "host=h passfile=/etc/pgpass"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, left := pgerr.WithoutPasswords(tt.in)
			if got != tt.want || left != (got != tt.in) {
				t.Errorf("WithoutPasswords(%q) = %q, %v, want %q", tt.in, got, left, tt.want)
			}
			if strings.Contains(got, "cret") || strings.Contains(strings.ToLower(got), "password=") {
				t.Errorf("WithoutPasswords(%q) = %q: a password shows", tt.in, got)
			}
		})
	}
}
