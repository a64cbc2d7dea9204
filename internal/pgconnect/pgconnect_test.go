package pgconnect_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cdc-relay/cdc-relay/internal/freeport"
	"github.com/cdc-relay/cdc-relay/internal/pgconnect"
	"github.com/cdc-relay/cdc-relay/internal/pgtemp/pgtemptest"
)

// pg is the package's PostgreSQL.
var pg = pgtemptest.NewShared(pgtemptest.SharedOptions{})

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }

// TestOpenFails: an unparsable connection string and a refused connection
// are each described, never with the password.
func TestOpenFails(t *testing.T) {
	free, err := freeport.Get()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, url string
		want      []string
	}{
		{"unparsable", "host=127.0.0.1 user=relay password = 's3 cret' port=x",
			[]string{"parse PostgreSQL URL: cannot parse `host=127.0.0.1 user=relay password = xxxxx port=x`: invalid port"}},
		{"refused", fmt.Sprintf("postgres://relay:s3cret@127.0.0.1:%d/app?sslmode=disable", free),
			[]string{fmt.Sprintf(`connect to PostgreSQL at 127.0.0.1:%d as "relay" (database "app")`, free), "is PostgreSQL running"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			conn, err := pgconnect.Open(ctx, tc.url, pgconnect.Options{})
			if err == nil {
				conn.Close(ctx)
				t.Fatal("connected; want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "cret") {
				t.Errorf("error %q shows the password", err)
			}
		})
	}
}

// TestOpenSetsRuntimeParams: the session has the parameters asked for,
// over those of the connection string.
func TestOpenSetsRuntimeParams(t *testing.T) {
	t.Parallel()
	db := pg.DB(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgconnect.Open(ctx, db.URL()+"&application_name=from-url&TimeZone=Europe/Paris", pgconnect.Options{
		RuntimeParams: map[string]string{"application_name": "cdc-relay test", "TimeZone": "UTC"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var app, tz string
	if err := conn.QueryRow(ctx, "SELECT current_setting('application_name'), current_setting('TimeZone')").Scan(&app, &tz); err != nil {
		t.Fatal(err)
	}
	if app != "cdc-relay test" || tz != "UTC" {
		t.Errorf("application_name %q, TimeZone %q; want %q, %q", app, tz, "cdc-relay test", "UTC")
	}
}
