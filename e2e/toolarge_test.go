package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cdc-relay/cdc-relay/internal/kafkatest"
)

// TestTooLargeRecordParkedBeforeProduce: a backlog read at full speed
// (20 transactions of 200 events of 50 keys) holds, among them, one event
// of a key in each transaction; the key's event in the eleventh is larger
// than its topic's max.message.bytes. The relay knows it before producing
// it: the record is parked FAILED with the topic's limit and the fix in
// its reason and never reaches the broker; the key's nine later events
// wait behind it (WAITING), none of them reaches Kafka, its ten earlier
// ones arrive in order, every other event arrives, and no record of the
// key overtook the parked one (cdc_relay_order_violations_total stays 0).
// The same in exactly-once delivery. The broker is asked to enforce the
// limit (kfake does); a produce hook watches that no request carries the
// record. The poller's first retry is an hour away: the poller is not
// under test.
func TestTooLargeRecordParkedBeforeProduce(t *testing.T) {
	parallel(t)
	const txns, perTx, bigAt, limit = 20, 200, 10, 100_000
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"at-least-once", nil},
		{"exactly-once", exactlyOnce},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			if e.kfake == nil {
				t.Skip("watches produce requests with a kfake hook")
			}
			agg, key := "order", "big-"+e.slot
			topic := e.topic(agg)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := kafkatest.CreateTopic(ctx, e.client(), topic, 1, map[string]string{"max.message.bytes": strconv.Itoa(limit)}); err != nil {
				t.Fatal(err)
			}
			var produced atomic.Bool
			e.kfake.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
				e.kfake.KeepControl()
				for _, rt := range req.(*kmsg.ProduceRequest).Topics {
					for _, p := range rt.Partitions {
						if batchHasKey(p.Records, []byte(key)) { // a value over refusedBytes
							produced.Store(true)
						}
					}
				}
				return nil, nil, false
			})
			for i := range txns {
				pad := 10
				if i == bigAt {
					pad = 2 * refusedBytes
				}
				mustExec(t, e.conn, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
					SELECT $1, 'k-' || (n % 50), 'Load', json_build_object('seq', n)::jsonb FROM generate_series($2::int, $3::int) n
					UNION ALL SELECT $1, $4, 'Keyed', json_build_object('seq', $5::int, 'pad', repeat('x', $6::int))::jsonb`,
					agg, i*perTx, (i+1)*perTx-1, key, i, pad)
			}
			p := e.startRelay(append([]string{"--retry-base", "1h", "--retry-max", "2h"}, tt.args...)...)
			states := func() map[string]int {
				o := &orderRun{e: e, topic: topic, key: key}
				return o.keyStates()
			}
			e.waitFor("the large event FAILED and the key's later ones WAITING", 60*time.Second, func() bool {
				s := states()
				return s["FAILED"] == 1 && s["WAITING"] == txns-bigAt-1
			})
			var keySeqs []int
			others := map[int]bool{}
			e.waitFor("every other event and the key's earlier ones delivered", 60*time.Second, func() bool {
				keySeqs, others = nil, map[int]bool{}
				for _, r := range e.readCommitted(topic, 30*time.Second) {
					var v struct{ Seq int }
					if err := json.Unmarshal(r.Value, &v); err != nil {
						t.Fatalf("record %s: %v", r.Value, err)
					}
					if string(r.Key) == key {
						keySeqs = append(keySeqs, v.Seq)
					} else {
						others[v.Seq] = true
					}
				}
				return len(others) == txns*perTx && len(keySeqs) >= bigAt
			})
			if want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}; !slices.Equal(keySeqs, want) {
				t.Errorf("the key's records in Kafka: %v, want %v", keySeqs, want)
			}
			var reason string
			if err := e.conn.QueryRow(context.Background(), "SELECT last_error FROM outbox_delivery WHERE status = 'FAILED' AND topic = $1", topic).Scan(&reason); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(reason, "MESSAGE_TOO_LARGE") || !strings.Contains(reason, "max.message.bytes of 100000 bytes") {
				t.Errorf("the parked record's reason %q, want MESSAGE_TOO_LARGE and the topic's limit", reason)
			}
			if produced.Load() {
				t.Error("the large record was produced")
			}
			checkOrderMetrics(p, nil)
			p.stop(30 * time.Second)
		})
	}
}
