package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cdc-relay/cdc-relay/internal/kafkatest"
	"github.com/cdc-relay/cdc-relay/sink"
)

// TestPartitionOfKeysIsJavas: the relay puts each key where Kafka's Java
// producer puts it, so that a key's events land in the same partition as
// the team's other producers' events of that key. 1,000 rows with
// distinct keys (ASCII, Cyrillic, Japanese with an emoji, 400-byte keys)
// go to a topic of 12 partitions; every record's partition must be the
// Java client's BuiltInPartitioner.partitionForKey. On Apache Kafka the
// Java client must answer; on another broker, without Java, the
// expectation is sink.Partition (which TestPartitionMatchesJavaClient in
// sink compares with the Java client).
func TestPartitionOfKeysIsJavas(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	const partitions = 12
	topic := e.topic("placed")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := kafkatest.CreateTopic(ctx, e.client(), topic, partitions, nil); err != nil {
		t.Fatal(err)
	}
	keys := placedKeys(1000)
	want := javaPlacement(ctx, t, keys, partitions)
	e.startRelay()
	if _, err := e.conn.Exec(ctx, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
		SELECT 'placed', k, 'Placed', json_build_object('i', i) FROM unnest($1::text[]) WITH ORDINALITY AS t(k, i)`, keys); err != nil {
		t.Fatal(err)
	}
	recs := e.readN(topic, len(keys), 120*time.Second)
	used := map[int32]bool{}
	for _, r := range recs {
		w, ok := want[string(r.Key)]
		if !ok {
			t.Fatalf("a record with key %q, not one of the rows'", r.Key)
		}
		if r.Partition != w {
			t.Errorf("key %q is in partition %d; the Java client puts it in %d", r.Key, r.Partition, w)
		}
		used[r.Partition] = true
	}
	if len(used) != partitions {
		t.Errorf("1,000 keys used %d of %d partitions", len(used), partitions)
	}
}

// placedKeys returns n distinct keys, text as a row's key column holds it:
// ASCII, Cyrillic, Japanese with an emoji, and 400-byte ones in turn.
func placedKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		switch i % 4 {
		case 0:
			keys[i] = fmt.Sprintf("order-%d", i)
		case 1:
			keys[i] = fmt.Sprintf("заказ-%d", i)
		case 2:
			keys[i] = fmt.Sprintf("注文-%d-🔑", i)
		default:
			keys[i] = strings.Repeat(fmt.Sprintf("long-%d-", i), 400/len(fmt.Sprintf("long-%d-", i))+1)[:400]
		}
	}
	return keys
}

// javaPlacement returns each key's partition among n as Kafka's Java
// client places it. On Apache Kafka the client must answer; elsewhere,
// without Java, it is sink.Partition.
func javaPlacement(ctx context.Context, t *testing.T, keys []string, n int) map[string]int32 {
	t.Helper()
	raw := make([][]byte, len(keys))
	for i, k := range keys {
		raw[i] = []byte(k)
	}
	want := make(map[string]int32, len(keys))
	java, err := kafkatest.JavaPartitions(ctx, raw, []int{n})
	if err != nil {
		if brokerKind() == "apache" {
			t.Fatal(err)
		}
		t.Logf("the Java client cannot answer (%v): expecting sink.Partition", err)
		for _, k := range keys {
			want[k] = int32(sink.Partition([]byte(k), n))
		}
		return want
	}
	for i, k := range keys {
		want[k] = int32(java[i].Partitions[0])
	}
	return want
}
