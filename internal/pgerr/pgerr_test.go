package pgerr_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/internal/freeport"
	"github.com/cdc-relay/cdc-relay/internal/pgerr"
	"github.com/cdc-relay/cdc-relay/internal/pgtemp"
	"github.com/cdc-relay/cdc-relay/internal/pgtemp/pgtemptest"
)

// shared is the package's PostgreSQL, for the tests that need no
// standby.
var shared = pgtemptest.NewShared(pgtemptest.SharedOptions{})

func TestMain(m *testing.M) { os.Exit(shared.Run(m)) }

func connect(t *testing.T, url string) error {
	t.Helper()
	cfg, err := pgconn.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err == nil {
		conn.Close(ctx)
		t.Fatalf("connected to %s; want a failure", url)
	}
	return pgerr.Connect(cfg, err, "")
}

// TestConnect: the error names where it connected and the real cause, not
// the refused TLS attempt that sslmode=prefer makes first, and says what to
// check; the password never appears.
func TestConnect(t *testing.T) {
	t.Parallel()
	pg := shared.DB(t).Cluster
	free, err := freeport.Get()
	if err != nil {
		t.Fatal(err)
	}
	// pg.URL disables TLS; these use the default sslmode=prefer.
	tests := []struct {
		name, url string
		want      []string
	}{
		{"no such database", strings.Replace(pg.URL("nosuch"), "?sslmode=disable", "", 1), []string{
			`as "postgres" (database "nosuch")`, `database "nosuch" does not exist`, "check the database name"}},
		{"nothing listening", fmt.Sprintf("postgres://relay:s3cret@127.0.0.1:%d/app", free), []string{
			fmt.Sprintf(`connect to PostgreSQL at 127.0.0.1:%d as "relay" (database "app")`, free), "connection refused", "is PostgreSQL running"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := connect(t, tt.url)
			msg := err.Error()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
			for _, bad := range []string{"tls error", "server refused TLS", "s3cret", "\n"} {
				if strings.Contains(msg, bad) {
					t.Errorf("error %q contains %q", msg, bad)
				}
			}
		})
	}
	var pgErr *pgconn.PgError
	if err := connect(t, pg.URL("nosuch")); !errors.As(err, &pgErr) || pgErr.Code != "3D000" {
		t.Fatalf("errors.As(%v, *PgError) = %v, want the server's 3D000", err, pgErr)
	}
}

func TestShuttingDown(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"terminated by a fast shutdown", &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}, true},
		{"terminated by a crash", &pgconn.PgError{Code: "57P02"}, true},
		{"refused while shutting down", fmt.Errorf("connect: %w", &pgconn.PgError{Code: "57P03", Message: "the database system is shutting down"}), true},
		{"the message only", errors.New("failed to connect: FATAL: the database system is shutting down (SQLSTATE 57P03)"), true},
		{"a lock timeout", &pgconn.PgError{Code: "55P03"}, false},
		{"connection refused", errors.New("dial tcp 127.0.0.1:5432: connect: connection refused"), false},
		{"nil", nil, false},
	} {
		if got := pgerr.ShuttingDown(tc.err); got != tc.want {
			t.Errorf("%s: ShuttingDown = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestConnectSeveralHosts: with a connection string that lists several
// hosts, the error names each, with its own cause: one down, one that
// does not take writes (a standby); and says what to do.
// It starts a cluster of its own: it needs a standby.
func TestConnectSeveralHosts(t *testing.T) {
	t.Parallel()
	primary := pgtemptest.StartT(t, pgtemp.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	standby, err := primary.StartStandby(ctx, pgtemp.StandbyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = standby.Stop() })
	free, err := freeport.Get()
	if err != nil {
		t.Fatal(err)
	}
	down := fmt.Sprintf("127.0.0.1:%d", free)
	url := fmt.Sprintf("postgres://postgres:s3cret@%s,%s/postgres?sslmode=disable&target_session_attrs=read-write", down, standby.Addr())
	msg := connect(t, url).Error()
	for _, w := range []string{
		fmt.Sprintf(`connect to PostgreSQL at %s,%s as "postgres" (database "postgres")`, down, standby.Addr()),
		down + " (127.0.0.1): dial error", "connection refused",
		standby.Addr() + " (127.0.0.1): ", "read only connection",
		"no server listed takes writes",
	} {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q lacks %q", msg, w)
		}
	}
	if strings.Contains(msg, "s3cret") || strings.Contains(msg, "\n") {
		t.Errorf("error %q shows the password or spans lines", msg)
	}
}

func TestHosts(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u@a:5433,b/db":                  "a:5433,b:5432",
		"host=a,b port=1,2 user=u":                  "a:1,b:2",
		"postgres://u@a/db?sslmode=prefer":          "a:5432",
		"postgres://u@[::1]:5433,127.0.0.1:5434/db": "[::1]:5433,127.0.0.1:5434",
		"host=/run/postgresql user=u":               "/run/postgresql:5432",
	} {
		cfg, err := pgconn.ParseConfig(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(pgerr.Hosts(cfg), ","); got != want {
			t.Errorf("Hosts(%q) = %q, want %q", in, got, want)
		}
	}
}
