package replication_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/replication"
)

// TestLookupSlotOfAnotherConsumer: LookupSlot reads a slot the relay did
// not create as it is. A pgoutput slot of the database is usable, and
// while another consumer streams it the lookup names that consumer (its
// server process and application_name). A slot of another plugin, a
// physical slot and a slot of another database are refused by Usable,
// each naming what to do; before, the physical slot could not even be
// read (its plugin and database are NULL).
func TestLookupSlotOfAnotherConsumer(t *testing.T) {
	t.Parallel()
	ctx, db, admin := pg.ConnectDB(t, 2*time.Minute)
	other := pg.DB(t)
	theirs, decoding, physical, elsewhere := db.Name+"_theirs", db.Name+"_decoding", db.Name+"_physical", db.Name+"_elsewhere"
	for _, sql := range []string{
		"SELECT pg_create_logical_replication_slot('" + theirs + "', 'pgoutput')",
		"SELECT pg_create_logical_replication_slot('" + decoding + "', 'test_decoding')",
		"SELECT pg_create_physical_replication_slot('" + physical + "')",
	} {
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	t.Cleanup(func() {
		_, _ = admin.Exec(context.Background(), "SELECT pg_drop_replication_slot($1)", physical) // a physical slot is no database's
	})
	otherConn, err := pgconn.Connect(ctx, other.URL())
	if err != nil {
		t.Fatal(err)
	}
	if err := otherConn.Exec(ctx, "SELECT pg_create_logical_replication_slot('"+elsewhere+"', 'pgoutput')").Close(); err != nil {
		t.Fatal(err)
	}
	_ = otherConn.Close(ctx)

	s, err := replication.LookupSlot(ctx, admin, theirs)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Usable(); err != nil || s.Active || s.ActivePID != 0 || s.Database != db.Name || s.Current != db.Name {
		t.Fatalf("an idle pgoutput slot of the database: %+v, Usable %v", s, err)
	}

	// Another consumer streams it, as a Debezium connector would.
	cfg, err := pgconn.ParseConfig(db.URL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["replication"] = "database"
	cfg.RuntimeParams["application_name"] = "Debezium Streaming"
	consumer, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close(context.Background())
	if err := pglogrepl.StartReplication(ctx, consumer, theirs, 0, pglogrepl.StartReplicationOptions{
		PluginArgs: []string{"proto_version '1'", "publication_names 'p'"}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !s.Active {
		if time.Now().After(deadline) {
			t.Fatalf("the slot is not active 30 s after the consumer started streaming it: %+v", s)
		}
		time.Sleep(20 * time.Millisecond)
		if s, err = replication.LookupSlot(ctx, admin, theirs); err != nil {
			t.Fatal(err)
		}
	}
	if int(s.ActivePID) != int(consumer.PID()) || s.ActiveApp != "Debezium Streaming" ||
		!strings.Contains(s.Consumer(), `application_name "Debezium Streaming"`) {
		t.Fatalf("the streamed slot: %+v (%s), want the consumer's process %d and its application_name", s, s.Consumer(), consumer.PID())
	}

	for _, tc := range []struct {
		slot string
		want []string
	}{
		{decoding, []string{`uses plugin "test_decoding"`, "needs pgoutput", "take it over", "choose another --slot", "cdc-relay migrate"}},
		{physical, []string{"is a physical slot", "choose another --slot"}},
		{elsewhere, []string{`belongs to another database ("` + other.Name + `"; the URL names "` + db.Name + `")`, `connect to "` + other.Name + `"`, "choose another --slot"}},
	} {
		s, err := replication.LookupSlot(ctx, admin, tc.slot)
		if err != nil {
			t.Fatalf("LookupSlot(%s): %v", tc.slot, err)
		}
		err = s.Usable()
		if err == nil {
			t.Errorf("slot %s (%+v) is usable", tc.slot, s)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("slot %s: %q does not say %q", tc.slot, err, w)
			}
		}
	}
}
