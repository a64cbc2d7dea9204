package sink

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/internal/kafkatest"
)

// TestMurmur2JavaVectors: the hash is Kafka's, by the vectors of the Java
// client's own tests (UtilsTest.testMurmur2), one for each length modulo
// 4, and the empty key.
func TestMurmur2JavaVectors(t *testing.T) {
	for _, tt := range []struct {
		key  string
		want int32
	}{
		{"21", -973932308},
		{"foobar", -790332482},
		{"a-little-bit-long-string", -985981536},
		{"a-little-bit-longer-string", -1486304829},
		{"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
		{"abc", 479470107},
		{"", 275646681},
	} {
		if got := int32(murmur2([]byte(tt.key))); got != tt.want {
			t.Errorf("murmur2(%q) = %d, want %d (the Java client's)", tt.key, got, tt.want)
		}
	}
}

// placementKeys are keys of every length from 0 to 64 bytes, non-ASCII
// ones, bytes that are negative as Java's signed bytes, and long ones.
func placementKeys() [][]byte {
	var keys [][]byte
	for n := 0; n <= 64; n++ {
		keys = append(keys, []byte(strings.Repeat("k", n)))
	}
	for i := range 200 {
		keys = append(keys,
			fmt.Appendf(nil, "order-%d", i),
			fmt.Appendf(nil, "заказ-%d-ключ", i),
			fmt.Appendf(nil, "注文%d🔑", i),
			[]byte{byte(i), 0xff, byte(255 - i), 0x80},
			[]byte(strings.Repeat(fmt.Sprintf("long-%d-", i), 40)))
	}
	return keys
}

// placementCounts are the partition counts the placement tests try.
var placementCounts = []int{1, 2, 3, 4, 7, 12, 16, 50, 100, 1000}

// TestPartitionMatchesFranzGosDefault: the stated partitioner places keys
// as franz-go's default did before it was stated, so that upgrading the
// relay moves no key.
func TestPartitionMatchesFranzGosDefault(t *testing.T) {
	def := kgo.StickyKeyPartitioner(nil).ForTopic("t")
	for _, key := range placementKeys() {
		for _, n := range placementCounts {
			if got, want := Partition(key, n), def.Partition(&kgo.Record{Key: key}, n); got != want {
				t.Fatalf("Partition(%q, %d) = %d, franz-go's murmur2 says %d", key, n, got, want)
			}
		}
	}
}

// TestPartitionMatchesJavaClient asks Kafka's Java client itself
// (BuiltInPartitioner.partitionForKey, the jars of the test broker) where
// each key goes, and compares. It needs Java and the jars: it skips
// without them, unless CDC_RELAY_TEST_KAFKA=apache or CI is set.
func TestPartitionMatchesJavaClient(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	keys := placementKeys()
	java, err := kafkatest.JavaPartitions(ctx, keys, placementCounts)
	if err != nil {
		if os.Getenv("CDC_RELAY_TEST_KAFKA") == "apache" || os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skipf("cannot ask the Java client (%v); `make test-kafka` has Java and the jars", err)
	}
	for i, key := range keys {
		if got := int32(murmur2(key)); got != java[i].Murmur2 {
			t.Errorf("murmur2(%q) = %d, the Java client's %d", key, got, java[i].Murmur2)
		}
		for j, n := range placementCounts {
			if got := Partition(key, n); got != java[i].Partitions[j] {
				t.Errorf("Partition(%q, %d) = %d, the Java client puts it in %d", key, n, got, java[i].Partitions[j])
			}
		}
	}
	t.Logf("%d keys × %d partition counts placed as the Java client places them", len(keys), len(placementCounts))
}

// TestProducerPlacesKeysAndCompresses: with each codec, a Sink's records
// reach the partition [Partition] names (the producer uses the stated
// partitioner) and read back intact.
func TestProducerPlacesKeysAndCompresses(t *testing.T) {
	const topic, partitions = "placed", 12
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	keys := placementKeys()[:300]
	for _, codec := range Compressions() {
		t.Run(codec, func(t *testing.T) {
			s, err := New(Config{Brokers: kc.ListenAddrs(), Compression: codec, Linger: 5 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			recs := make([]*kgo.Record, len(keys))
			for i, k := range keys {
				recs[i] = &kgo.Record{Topic: topic, Key: k, Value: []byte(strings.Repeat(codec, 100))}
			}
			for i, err := range s.ProduceWait(ctx, recs) {
				if err != nil {
					t.Fatalf("record %d: %v", i, err)
				}
				if want := int32(Partition(keys[i], partitions)); recs[i].Partition != want {
					t.Errorf("key %q went to partition %d, want %d", keys[i], recs[i].Partition, want)
				}
			}
			checkReadBack(ctx, t, kc.ListenAddrs(), topic, recs)
		})
	}
}

// checkReadBack reads topic until it holds every one of recs (by
// partition and offset), each with its value.
func checkReadBack(ctx context.Context, t *testing.T, brokers []string, topic string, recs []*kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	want := map[[2]int64]string{}
	for _, r := range recs {
		want[[2]int64{int64(r.Partition), r.Offset}] = string(r.Value)
	}
	for len(want) > 0 {
		f := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d records not read back: %v", len(want), ctx.Err())
		}
		f.EachRecord(func(r *kgo.Record) {
			at := [2]int64{int64(r.Partition), r.Offset}
			if v, ok := want[at]; ok {
				if v != string(r.Value) {
					t.Errorf("partition %d offset %d: read %.20q…, produced %.20q…", r.Partition, r.Offset, r.Value, v)
				}
				delete(want, at)
			}
		})
	}
}

// TestNewRefusesBadProducerSettings: an unknown codec names the choices; a
// batch size out of range names the range.
func TestNewRefusesBadProducerSettings(t *testing.T) {
	for _, tt := range []struct {
		cfg  Config
		want string
	}{
		{Config{Compression: "brotli"}, `unknown Kafka compression "brotli": want one of none, gzip, snappy, lz4, zstd`},
		{Config{BatchMaxBytes: 512}, "want 1024 (1 KiB) to 104857600 (100 MiB)"},
		{Config{BatchMaxBytes: 200 << 20}, "out of range"},
	} {
		tt.cfg.Brokers = []string{"127.0.0.1:1"}
		s, err := New(tt.cfg)
		if err == nil {
			s.Close()
			t.Errorf("New(%+v) succeeded", tt.cfg)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v): %v, want it to say %q", tt.cfg, err, tt.want)
		}
	}
	s, err := New(Config{Brokers: []string{"127.0.0.1:1"}, BatchMaxBytes: 4 << 20, Compression: "zstd"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.BatchMaxBytes() != 4<<20 {
		t.Errorf("BatchMaxBytes() = %d, want %d", s.BatchMaxBytes(), 4<<20)
	}
}

// TestProducerPlacesPlacedRecords: a record placed on a partition (Place)
// goes there whatever its key, with a key or without, while the others
// go where their key's hash does; one placed beyond the topic's
// partitions, or on -1, fails, Unplaceable, alone.
func TestProducerPlacesPlacedRecords(t *testing.T) {
	const topic, partitions = "placed-by-column", 6
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	s, err := New(Config{Brokers: kc.ListenAddrs(), Linger: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type rec struct {
		key    []byte
		place  int32 // noPlace: not placed
		want   int32 // -1: refused
		reason string
	}
	const noPlace = -100
	keys := placementKeys()[:4]
	cases := []rec{
		{keys[0], 5, 5, "keyed, placed"},
		{keys[1], noPlace, int32(Partition(keys[1], partitions)), "keyed, not placed"},
		{keys[1], -1, -1, "placed on partition -1 (a negative partition column)"},
		{nil, 3, 3, "no key, placed"},
		{keys[2], 0, 0, "placed on partition 0"},
		{keys[3], partitions, -1, "placed beyond the topic's partitions"},
		{keys[0], 2, 2, "the first key again, placed elsewhere"},
	}
	recs := make([]*kgo.Record, len(cases))
	for i, c := range cases {
		recs[i] = &kgo.Record{Topic: topic, Key: c.key, Value: []byte(c.reason)}
		if c.place != noPlace {
			Place(recs[i], c.place)
		}
	}
	var ok []*kgo.Record
	for i, err := range s.ProduceWait(ctx, recs) {
		c := cases[i]
		switch {
		case c.want < 0:
			if !Unplaceable(err) || !Permanent(err) {
				t.Errorf("%s: error %v, want one Unplaceable and Permanent", c.reason, err)
			}
		case err != nil:
			t.Errorf("%s: %v", c.reason, err)
		case recs[i].Partition != c.want:
			t.Errorf("%s: went to partition %d, want %d", c.reason, recs[i].Partition, c.want)
		default:
			ok = append(ok, recs[i])
		}
	}
	checkReadBack(ctx, t, kc.ListenAddrs(), topic, ok)
}

// keyedContext is a record's Context that Place did not wrap, as the
// stream's Inflight of an event left to its key's hash.
type keyedContext struct{ context.Context }

// BenchmarkPartitioner: the producer's partitioner's choice for a keyed
// record that Place did not place (the stream's usual record), by
// the wrapper that honours placements (placing) and by the uniform bytes
// partitioner alone: what honouring placements costs each record.
func BenchmarkPartitioner(b *testing.B) {
	uniform := kgo.UniformBytesPartitioner(stickyBytes, true, true, kgo.KafkaHasher(murmur2))
	r := &kgo.Record{Topic: "t", Key: []byte("order-12345"), Value: make([]byte, 200), Context: keyedContext{context.Background()}}
	for _, c := range []struct {
		name string
		p    kgo.Partitioner
	}{{"uniform", uniform}, {"placing", partitioner()}} {
		b.Run(c.name, func(b *testing.B) {
			tp := c.p.ForTopic("t").(kgo.TopicBackupPartitioner)
			n := 0
			for b.Loop() {
				if tp.RequiresConsistency(r) {
					n += tp.PartitionByBackup(r, 12, nil)
				}
			}
			if n < 0 {
				b.Fatal(n)
			}
		})
	}
}
