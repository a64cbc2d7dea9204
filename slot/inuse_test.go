package slot

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/internal/fatal"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/replication"
)

// TestSlotOfAnotherConsumerIsWaitedFor: a slot another consumer streams
// (a Debezium connector's, still running), which the relay never read,
// stops no session for good and records nothing: the session tries again
// (an InUseError, not fatal) until the consumer has stopped, and then
// starts from the slot's confirmed position. A slot the relay has a
// checkpoint row for is not this case: START_REPLICATION tells.
func TestSlotOfAnotherConsumerIsWaitedFor(t *testing.T) {
	streamed := replication.Slot{Name: "dbz", Plugin: "pgoutput", SameDatabase: true, ConfirmedFlush: 100,
		Active: true, ActivePID: 4242, ActiveApp: "Debezium Streaming"}
	err := checkFound(streamed, checkpoint.Checkpoint{}, false, defaultConfig())
	var inUse *InUseError
	if !errors.As(err, &inUse) || fatal.Is(err) {
		t.Fatalf("checkFound of a streamed slot the relay never read: %v, want an InUseError, not fatal", err)
	}
	for _, w := range []string{`"dbz"`, "server process 4242", `application_name "Debezium Streaming"`, "confirmed position", "DELETE /connectors/", "trying again"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q does not say %q", err, w)
		}
	}
	if err := checkFound(streamed, checkpoint.Checkpoint{LSN: 100, WriteAhead: true}, true, defaultConfig()); err != nil {
		t.Fatalf("checkFound of a streamed slot with a checkpoint row: %v", err)
	}
	stopped := streamed
	stopped.Active, stopped.ActivePID, stopped.ActiveApp = false, 0, ""
	if err := checkFound(stopped, checkpoint.Checkpoint{}, false, defaultConfig()); err != nil {
		t.Fatalf("checkFound once the consumer stopped: %v", err)
	}
}

// TestPrepareLeavesAStreamedSlotUnrecorded: migrate on a slot another
// consumer streams records no checkpoint for it, since the consumer
// confirms positions past it (the relay's first run would then refuse
// the slot as advanced by another consumer, a gap); once the consumer
// has stopped, migrate records the slot's confirmed position. Neither
// drops or moves the slot.
func TestPrepareLeavesAStreamedSlotUnrecorded(t *testing.T) {
	t.Parallel()
	db := sharedPG.DB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, db.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	cfg := defaultConfig()
	cfg.PostgresURL, cfg.Slot = db.URL(), db.Name
	if _, err := migrations.Apply(ctx, conn, migrationsOf(cfg)); err != nil {
		t.Fatal(err)
	}
	var created string
	if err := conn.QueryRow(ctx, "SELECT lsn::text FROM pg_create_logical_replication_slot($1, 'pgoutput')", cfg.Slot).Scan(&created); err != nil {
		t.Fatal(err)
	}

	pc, err := pgconn.ParseConfig(db.URL())
	if err != nil {
		t.Fatal(err)
	}
	pc.RuntimeParams["replication"] = "database"
	pc.RuntimeParams["application_name"] = "Debezium Streaming"
	consumer, err := pgconn.ConnectConfig(ctx, pc)
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close(context.Background())
	if err := pglogrepl.StartReplication(ctx, consumer, cfg.Slot, 0, pglogrepl.StartReplicationOptions{
		PluginArgs: []string{"proto_version '1'", "publication_names 'cdc_relay'"}}); err != nil {
		t.Fatal(err)
	}
	waitActive(t, conn, cfg.Slot, true)

	res, err := Prepare(ctx, conn, cfg)
	if err != nil {
		t.Fatalf("Prepare on a streamed slot: %v", err)
	}
	if !res.InUse || res.Created || res.Slot.ActivePID != int32(consumer.PID()) || res.Slot.ConfirmedFlush.String() != created {
		t.Fatalf("Prepare on a streamed slot = %+v, want InUse, the consumer's process %d, confirmed %s", res, consumer.PID(), created)
	}
	store := checkpoint.NewStore(conn, cfg.CheckpointSchema, cfg.CheckpointTable)
	if cp, ok, err := store.Load(ctx, cfg.Slot); err != nil || ok {
		t.Fatalf("Prepare on a streamed slot recorded a checkpoint: %+v, %v, %v", cp, ok, err)
	}

	_ = consumer.Close(ctx)
	waitActive(t, conn, cfg.Slot, false)
	if res, err = Prepare(ctx, conn, cfg); err != nil || res.InUse || res.Created {
		t.Fatalf("Prepare once the consumer stopped = %+v, %v", res, err)
	}
	cp, ok, err := store.Load(ctx, cfg.Slot)
	if err != nil || !ok || cp.LSN.String() != created {
		t.Fatalf("the checkpoint once the consumer stopped: %+v, %v, %v, want the slot's confirmed %s", cp, ok, err, created)
	}
}

// waitActive waits until a walsender streams slot (active) or none does.
func waitActive(t *testing.T, conn *pgx.Conn, slot string, active bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, err := replication.LookupSlot(t.Context(), conn, slot)
		if err != nil {
			t.Fatal(err)
		}
		if s.Active == active {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("slot %s: active %v 30 s on, want %v", slot, s.Active, active)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
