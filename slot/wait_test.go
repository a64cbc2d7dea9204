package slot

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/migrations"
)

// syncBuffer is a bytes.Buffer safe for a logger and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestSlotCreationNamesTheTransactionItWaitsFor (adversarial pass 2, F10):
// an open transaction of another role that holds a transaction id makes
// CREATE_REPLICATION_SLOT wait; after slotWaitWarn the relay logs that
// session (pid, role, application_name) and that the slot is created when
// it ends, and the slot is created once it does.
//
// A slot's creation waits for every transaction of the cluster, and the
// relay's line names any: the test does not run beside the package's
// other tests (no t.Parallel), and its role is its own.
func TestSlotCreationNamesTheTransactionItWaitsFor(t *testing.T) {
	ctx, db, conn := sharedPG.ConnectDB(t, 2*time.Minute)
	app := db.Name + "_app"
	if _, err := conn.Exec(ctx, "CREATE ROLE "+app+" LOGIN"); err != nil {
		t.Fatal(err)
	}
	blocker, err := pgx.Connect(ctx, strings.Replace(db.URL(), "postgres@", app+"@", 1)+"&application_name=app-worker")
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Close(context.Background())
	tx, err := blocker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT txid_current()"); err != nil {
		t.Fatal(err)
	}
	var buf syncBuffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	created := make(chan error, 1)
	slot := db.Name + "_waits"
	stop := WatchCreation(ctx, db.URL(), slot, log)
	go func() {
		_, err := conn.Exec(ctx, "SELECT pg_create_logical_replication_slot($1, 'pgoutput')", slot)
		stop()
		created <- err
	}()
	pid := strconv.Itoa(int(blocker.PgConn().PID()))
	deadline := time.Now().Add(slotWaitWarn + 20*time.Second)
	for !strings.Contains(buf.String(), "server process "+pid) {
		select {
		case err := <-created:
			t.Fatalf("the slot was created (%v) while a transaction held an id", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no line names the waiting transaction's session %s; log:\n%s", pid, buf.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, want := range []string{`application_name \"app-worker\"`, "of role " + app, "created when the holder's transaction ends or its session is terminated"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("the wait's line lacks %q:\n%s", want, buf.String())
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-created:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the slot was not created once the transaction ended")
	}
}

// TestSlotCreationWaitUsesTheURLFile: the wait's probe connects with
// --postgres-url-file's current contents, as the session does, not the
// connection string read at start (here a role that no longer logs in):
// it names the holder rather than saying it could not be told. As the
// test above, it does not run beside the package's other tests.
func TestSlotCreationWaitUsesTheURLFile(t *testing.T) {
	ctx, db, conn := sharedPG.ConnectDB(t, 2*time.Minute)
	blocker, err := pgx.Connect(ctx, db.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Close(context.Background())
	tx, err := blocker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, "SELECT txid_current()"); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "url")
	if err := os.WriteFile(file, []byte(db.URL()), 0o600); err != nil {
		t.Fatal(err)
	}
	var buf syncBuffer
	cfg := defaultConfig()
	cfg.Slot, cfg.Logger = db.Name+"_waits_file", slog.New(slog.NewTextHandler(&buf, nil))
	cfg.PostgresURL = strings.Replace(db.URL(), "postgres@", "rotated_away@", 1)
	cfg.LiveURL = func() string { b, _ := os.ReadFile(file); return strings.TrimSpace(string(b)) }
	if _, err := migrations.Apply(ctx, conn, migrationsOf(cfg)); err != nil {
		t.Fatal(err)
	}
	creator, err := pgx.Connect(ctx, db.URL()) // without the lock_timeout migrate sets
	if err != nil {
		t.Fatal(err)
	}
	defer creator.Close(context.Background())
	created := make(chan error, 1)
	go func() { created <- createSlotSQL(ctx, creator, cfg) }()
	pid := strconv.Itoa(int(blocker.PgConn().PID()))
	deadline := time.Now().Add(slotWaitWarn + 20*time.Second)
	for !strings.Contains(buf.String(), "server process "+pid) {
		if strings.Contains(buf.String(), "could not be told") || time.Now().After(deadline) {
			t.Fatalf("no line names the waiting transaction's session %s; log:\n%s", pid, buf.String())
		}
		select {
		case err := <-created:
			t.Fatalf("the slot was created (%v) while a transaction held an id", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-created; err != nil {
		t.Fatal(err)
	}
}
