package setup

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cdc-relay/cdc-relay/internal/pgtemp/pgtemptest"
	"github.com/cdc-relay/cdc-relay/relay"
)

// TestMigrate: a first run creates the relay's tables, the default outbox,
// the publication with both outbox tables, and the slot; a second changes
// nothing and says so.
func TestMigrate(t *testing.T) {
	ctx, pg, _ := pgtemptest.ConnectT(t, 2*time.Minute, "CREATE TABLE app_events (id bigint PRIMARY KEY, payload jsonb)")
	url := pg.URL("postgres")
	rc := relay.DefaultConfig()
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
	if len(res.Applied) != 0 || res.CreatedOutbox || res.CreatedPublication || len(res.Published) != 0 || res.Slot.Created || res.SlotErr != nil {
		t.Errorf("second run: %+v", res)
	}
	if _, err := Migrate(ctx, "host=127.0.0.1 password = 's3 cret' port=x", rc, Options{}); err == nil ||
		!strings.Contains(err.Error(), "parse PostgreSQL URL") || strings.Contains(err.Error(), "cret") {
		t.Errorf("with an unparsable URL: %v", err)
	}
}
