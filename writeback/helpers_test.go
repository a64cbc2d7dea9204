package writeback

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdc-relay/cdc-relay/internal/pgtemp"
	"github.com/cdc-relay/cdc-relay/internal/pgtemp/pgtemptest"
)

// testTimeZone is the pool's session time zone, far from UTC, so that a
// timestamp written in UTC instead of the session's zone is 10 hours off.
const testTimeZone = "Pacific/Honolulu"

// pg is the package's PostgreSQL, shared by the tests that neither stop
// nor restart it.
var pg = pgtemptest.NewShared(pgtemptest.SharedOptions{})

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }

// startDB makes a database of the test's own on the package's cluster and
// returns a pool on it as the superuser, with sessions in testTimeZone.
func startDB(t *testing.T) (context.Context, *pgtemptest.DB, *pgxpool.Pool) {
	t.Helper()
	db := pg.DB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx, db, newPool(t, ctx, db.URL(), "")
}

// startOwnDB starts a throwaway PostgreSQL of the test's own, for a test
// that stops or restarts it, and returns a pool on it as startDB does.
func startOwnDB(t *testing.T) (context.Context, *pgtemp.Cluster, *pgxpool.Pool) {
	t.Helper()
	c := pgtemptest.StartT(t, pgtemp.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx, c, newPool(t, ctx, c.URL("postgres"), "")
}

// newPool returns a pool on url (as user, if not ""), in testTimeZone.
func newPool(t *testing.T, ctx context.Context, url, user string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		cfg.ConnConfig.User = user
	}
	cfg.ConnConfig.RuntimeParams["timezone"] = testTimeZone
	cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func exec(t *testing.T, ctx context.Context, db DB, sql string, args ...any) {
	t.Helper()
	if _, err := db.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func scalar[T any](t *testing.T, ctx context.Context, db DB, sql string, args ...any) T {
	t.Helper()
	var v T
	if err := db.QueryRow(ctx, sql, args...).Scan(&v); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return v
}

// states returns the status of table's rows by id, followed by the error
// column's value, if errorColumn is set and the value is not NULL. table
// and status are quoted as needed.
func states(t *testing.T, ctx context.Context, db *pgxpool.Pool, table, status, errorColumn string) map[string]string {
	t.Helper()
	errExpr := "''"
	if errorColumn != "" {
		errExpr = "coalesce(" + pgx.Identifier{errorColumn}.Sanitize() + "::text, '')"
	}
	rows, err := db.Query(ctx, fmt.Sprintf("SELECT id::text, %s::text, %s FROM %s", status, errExpr, table))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for rows.Next() {
		var id, st, e string
		if err := rows.Scan(&id, &st, &e); err != nil {
			t.Fatal(err)
		}
		if e != "" {
			st += " " + e
		}
		out[id] = st
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// waitFor waits up to d for cond, then fails the test naming what.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		<-tick.C
	}
}

// runWriter runs w until the test ends, and checks that Run returned.
func runWriter(t *testing.T, w *Writer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		start := time.Now()
		defer func() { t.Logf("Run returned %v after its context ended", time.Since(start)) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("Run did not return 30 s after its context ended")
		}
	})
}

// countingDB counts the statements run through it, and fails every call
// while down is set, as a database that cannot be reached.
type countingDB struct {
	DB
	execs atomic.Int64
	down  atomic.Bool
}

var errDown = errors.New("dial tcp: connection refused (test)")

func (c *countingDB) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if c.down.Load() {
		return pgconn.CommandTag{}, errDown
	}
	c.execs.Add(1)
	return c.DB.Exec(ctx, sql, args...)
}

func (c *countingDB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if c.down.Load() {
		return errRow{errDown}
	}
	return c.DB.QueryRow(ctx, sql, args...)
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// fakeDB answers the look-up and every UPDATE without a database, for
// the benchmark.
type fakeDB struct{}

func (fakeDB) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return pgconn.NewCommandTag("UPDATE " + strconv.Itoa(len(args[0].([]string)))), nil
}

func (fakeDB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row { return fakeRow{} }

type fakeRow struct{}

func (fakeRow) Scan(dest ...any) error {
	*dest[0].(*bool) = true
	*dest[1].(*[]string) = []string{"id", "status"}
	*dest[2].(*[]string) = []string{"uuid", "text"}
	*dest[3].(*[]string) = []string{"uuid", "text"}
	*dest[4].(*[]bool) = []bool{false, false}
	*dest[5].(*[]bool) = []bool{true, true}
	*dest[6].(*[]string) = []string{"uuid", "text"}
	return nil
}

// flushNow runs one flush of w, as Run would, ignoring retry times.
func flushNow(ctx context.Context, w *Writer) { w.flusher.flush(ctx, true) }
