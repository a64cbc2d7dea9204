package setup

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/outbox"
	"github.com/cdc-relay/cdc-relay/writeback"
)

// TestMigrate: a first run creates the relay's tables, the default outbox,
// the publication with both outbox tables, and the slot; a second changes
// nothing and says so.
func TestMigrate(t *testing.T) {
	t.Parallel()
	ctx, db, _ := pg.ConnectDB(t, 2*time.Minute, "CREATE TABLE app_events (id bigint PRIMARY KEY, payload jsonb)")
	url := db.URL()
	rc := defaultConfig()
	rc.Slot = db.Name // slots are the cluster's
	second := rc.Tables[0]
	second.Mapping.Table = "app_events"
	rc.Tables = append(rc.Tables, second)

	res, err := Migrate(ctx, url, rc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Applied) == 0 || !res.CreatedOutbox || !res.CreatedPublication || res.SlotErr != nil || !res.Slot.Created ||
		!slices.Equal(res.Published, []string{"public.outbox", "public.app_events"}) {
		t.Errorf("first run: %+v", res)
	}
	res, err = Migrate(ctx, url, rc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Applied) != 0 || res.CreatedOutbox || res.CreatedPublication || len(res.Published) != 0 || res.Slot.Created || res.SlotErr != nil ||
		len(res.Recreated) != 0 {
		t.Errorf("second run: %+v", res)
	}
	if _, err := Migrate(ctx, "host=127.0.0.1 password = 's3 cret' port=x", rc, Options{}); err == nil ||
		!strings.Contains(err.Error(), "parse PostgreSQL URL") || strings.Contains(err.Error(), "cret") {
		t.Errorf("with an unparsable URL: %v", err)
	}
}

// TestMigrateSaysWhatItCreatedAgain: tables of the relay dropped after
// their migrations were applied are created again by the next migrate,
// which says so (applying no migration), and by the one after it no more.
func TestMigrateSaysWhatItCreatedAgain(t *testing.T) {
	t.Parallel()
	ctx, db, conn := pg.ConnectDB(t, 2*time.Minute)
	url := db.URL()
	rc := defaultConfig()
	if _, err := Migrate(ctx, url, rc, Options{NoSlot: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "DROP TABLE cdc_relay_paused_topics, "+rc.StatusTable); err != nil {
		t.Fatal(err)
	}
	res, err := Migrate(ctx, url, rc, Options{NoSlot: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`"public"."` + rc.StatusTable + `"`, `"public"."cdc_relay_paused_topics"`}
	if len(res.Applied) != 0 || !slices.Equal(res.Recreated, want) {
		t.Errorf("after the drop: applied %v, recreated %v; want none applied, %v recreated", res.Applied, res.Recreated, want)
	}
	if res, err = Migrate(ctx, url, rc, Options{NoSlot: true}); err != nil || len(res.Recreated) != 0 {
		t.Errorf("the run after: recreated %v, err %v; want none", res.Recreated, err)
	}
}

// TestMigrateResetTriggers: Migrate gives each table whose write-back
// lists pending values its reset trigger, and reports per table what it
// did: created, kept, dropped once the values are gone.
func TestMigrateResetTriggers(t *testing.T) {
	t.Parallel()
	ctx, db, _ := pg.ConnectDB(t, 2*time.Minute,
		"CREATE TABLE app_outbox (id bigint PRIMARY KEY, payload jsonb, status text)",
		"CREATE TABLE other_outbox (id bigint PRIMARY KEY, payload jsonb, status text)")
	rc := defaultConfig()
	wb := &writeback.Columns{StatusColumn: "status", Delivered: "SENT", Failed: "FAILED", Pending: []string{"PENDING"}}
	rc.Tables = []outbox.Table{
		{Mapping: decoder.Mapping{Schema: "public", Table: "app_outbox", IDColumn: "id"}, WriteBack: wb},
		{Mapping: decoder.Mapping{Schema: "public", Table: "other_outbox", IDColumn: "id"}},
	}
	reset := migrations.Reset{IDColumn: "id", StatusColumn: "status", Pending: []string{"PENDING"}, Publishers: []string{"kafka"}}
	tests := []struct {
		name    string
		pending bool // the first table lists pending values
		want    []ResetTrigger
	}{
		{name: "created", pending: true, want: []ResetTrigger{{Table: "public.app_outbox", Reset: reset, Change: migrations.ResetCreated}}},
		{name: "kept", pending: true, want: []ResetTrigger{{Table: "public.app_outbox", Reset: reset, Change: migrations.ResetKept}}},
		{name: "dropped", want: []ResetTrigger{{Table: "public.app_outbox", Change: migrations.ResetDropped}}},
		{name: "none", want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc.Tables[0].WriteBack = nil
			if tc.pending {
				rc.Tables[0].WriteBack = wb
			}
			res, err := Migrate(ctx, db.URL(), rc, Options{SkipOutbox: true, NoSlot: true})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(res.Resets, tc.want) {
				t.Errorf("Resets %+v, want %+v", res.Resets, tc.want)
			}
		})
	}
}
