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
