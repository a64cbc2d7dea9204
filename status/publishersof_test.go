package status

import (
	"maps"
	"slices"
	"testing"
)

// TestPublishersOf: PublishersOf says whose each id is, whatever the
// store's publisher, and leaves out the ids not in the table;
// TablePublishers lists the publishers that have rows, Kafka's first.
func TestPublishersOf(t *testing.T) {
	ctx, db := newTestDB(t)
	if names, err := TablePublishers(ctx, db.store); err != nil || len(names) != 0 {
		t.Fatalf("an empty table's publishers: %v, %v; want none", names, err)
	}
	if _, err := db.conn.Exec(ctx, `INSERT INTO outbox_delivery (event_id, topic, status, publisher, last_error) VALUES
		('e-1', 'orders', 'FAILED', 'zeta', 'x'), ('e-1', 'orders', 'FAILED', 'kafka', 'x'), ('e-2', 'orders', 'DEAD', 'partner', 'x'), ('e-3', 'orders', 'DEAD', 'partner', 'x')`); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Store{db.store, NewStore(db.conn, "public", "outbox_delivery", Publisher("partner"))} {
		got, err := PublishersOf(ctx, s, []int64{4, 1, 2, 99})
		want := map[int64]string{1: "zeta", 2: KafkaPublisher, 4: "partner"}
		if err != nil || !maps.Equal(got, want) {
			t.Errorf("PublishersOf by %s's store: %v, %v; want %v", s.Publisher(), got, err, want)
		}
		names, err := TablePublishers(ctx, s)
		if want := []string{KafkaPublisher, "partner", "zeta"}; err != nil || !slices.Equal(names, want) {
			t.Errorf("TablePublishers by %s's store: %v, %v; want %v", s.Publisher(), names, err, want)
		}
	}
}
