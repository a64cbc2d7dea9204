package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCheckpointTopicRefusedAsEventTopic: a row aimed at the checkpoint
// topic, keyed by the slot (adversarial pass 2, F4), is parked DEAD with
// its reason, not written there; and a record keyed by the slot that is
// not a checkpoint (written there by anyone who may produce to the topic)
// is skipped with a warning: the relay starts again from its own last
// position and delivers every event once.
func TestCheckpointTopicRefusedAsEventTopic(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	good := e.topic("order")
	e.createTopic(good, nil)
	p := e.startRelay(exactlyOnce...)
	insert := func(n int) {
		mustExec(t, e.conn, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
			SELECT 'order', 'key-' || g, 'Good', json_build_object('n', g)::jsonb FROM generate_series(1, $1::int) g`, n)
	}
	insert(10)
	var evilID string
	if err := e.conn.QueryRow(context.Background(), `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, topic, payload)
		VALUES ('order', $1, 'Evil', $2, '"not a checkpoint"') RETURNING id::text`, e.slot, checkpointTopic).Scan(&evilID); err != nil {
		t.Fatal(err)
	}
	insert(10)
	e.waitConfirmed(time.Minute)
	p.stop(30 * time.Second)

	// Anyone who may produce to the checkpoint topic: a record keyed by
	// the slot that is not a checkpoint, the newest of the slot's.
	cl := e.client()
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: checkpointTopic, Key: []byte(e.slot), Value: []byte(`"not a checkpoint either"`)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	insert(10)
	p = e.startRelay(exactlyOnce...)
	e.waitConfirmed(time.Minute)
	ids := e.outboxIDs("event_type = 'Good'")
	requireEachOnce(t, good, e.countCommitted(good, len(ids), time.Minute), ids)
	e.waitFor("the skipped record is warned of", 30*time.Second, func() bool {
		return strings.Contains(p.Log(), "not checkpoints")
	})
	rows := e.failedList()
	if len(rows) != 1 || rows[0].EventID == nil || *rows[0].EventID != evilID || rows[0].Status != "DEAD" ||
		!strings.Contains(rows[0].LastError, "checkpoint topic") {
		t.Fatalf("failed list shows %+v; want only the row aimed at the checkpoint topic (%s), DEAD, naming the checkpoint topic", rows, evilID)
	}
	p.stop(30 * time.Second)
}
