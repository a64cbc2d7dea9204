package sink

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// stickyBytes is how many bytes of records without a key go to one
// partition before the partitioner picks another (franz-go's default).
const stickyBytes = 64 << 10

// partitioner is the producer's partitioner, stated here so that an
// upgrade of franz-go cannot move keys: a record with a key (an empty key
// too) goes to [Partition], where Kafka's Java producer puts it; a record
// without one goes to a partition that changes every stickyBytes,
// preferring the partitions with the least buffered, as the Java
// producer's uniform sticky partitioner does (KIP-794); a record placed on
// a partition ([Place]) goes there.
func partitioner() kgo.Partitioner {
	return placing{kgo.UniformBytesPartitioner(stickyBytes, true, true, kgo.KafkaHasher(murmur2))}
}

// Partition is the partition, of n, of a record with key: Kafka's Java
// producer's choice for a keyed record, toPositive(murmur2(key)) % n, so
// that a key lands where the team's other producers put it. n must be
// positive.
func Partition(key []byte, n int) int {
	return int(murmur2(key)&0x7fffffff) % n
}

// murmur2 is Kafka's murmur2 hash (org.apache.kafka.common.utils.Utils
// .murmur2): MurmurHash2 with seed 0x9747b28c, the key's bytes read
// little-endian four at a time.
func murmur2(b []byte) uint32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	h := seed ^ uint32(len(b))
	for ; len(b) >= 4; b = b[4:] {
		k := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	switch len(b) {
	case 3:
		h ^= uint32(b[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(b[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(b[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}

// Place makes r go to partition p, as the record of an event placed by
// its table's partition column (decoder.Event.Placed): it wraps r's
// Context (the background context when it has none; franz-go then watches
// the Produce context only) in one that names the partition, which the
// producer's partitioner honours whatever r's key; the record fails,
// [Unplaceable], when its topic has no such partition. [ContextOf] is r's
// Context as it was.
func Place(r *kgo.Record, p int32) {
	ctx := r.Context
	if ctx == nil {
		ctx = context.Background()
	}
	r.Context = &placed{Context: ctx, partition: p}
}

// ContextOf is r's Context without what [Place] wrapped it in.
func ContextOf(r *kgo.Record) context.Context {
	if p, ok := r.Context.(*placed); ok {
		return p.Context
	}
	return r.Context
}

// placed is the Context of a record [Place] placed on partition.
type placed struct {
	context.Context
	partition int32
}

// PlacedOf is the partition [Place] placed r on, if it did: one comparison
// of the Context's type for a record it did not.
func PlacedOf(r *kgo.Record) (int32, bool) {
	if p, ok := r.Context.(*placed); ok {
		return p.partition, true
	}
	return 0, false
}

// errNoSuchPartition marks the error franz-go fails a placed record with
// when its topic has fewer partitions.
const errNoSuchPartition = "invalid record partitioning choice"

// Unplaceable reports whether err failed a record because the partition
// it was placed on is not one of its topic's.
func Unplaceable(err error) bool {
	return err != nil && strings.Contains(err.Error(), errNoSuchPartition)
}

// Explain is err with what the operator can do about it when it is
// [Unplaceable]; any other err as it is.
func Explain(err error) error {
	if !Unplaceable(err) {
		return err
	}
	return fmt.Errorf("the topic has no partition the event's partition column names (%w): "+
		"add partitions to the topic (kafka-topics.sh --alter --partitions N), or let the event go to another topic, "+
		"then retry it (cdc-relay failed retry); a negative partition names none: correct the row and reset it, or skip the event (cdc-relay failed skip)", err)
}

// placing is the producer's partitioner: keyed's, but for a record
// placed on a partition ([Place]). keyed's topic partitioners must be
// kgo.TopicBackupPartitioner (franz-go's uniform bytes partitioner's are).
type placing struct{ keyed kgo.Partitioner }

// ForTopic returns the topic's partitioner.
func (p placing) ForTopic(topic string) kgo.TopicPartitioner {
	return placingTopic{p.keyed.ForTopic(topic).(kgo.TopicBackupPartitioner)}
}

// placingTopic is placing for one topic. It has no OnNewBatch, as the
// uniform bytes partitioner it wraps has none: franz-go then buffers a
// record without holding the topic's partitioner.
type placingTopic struct{ keyed kgo.TopicBackupPartitioner }

// RequiresConsistency is true for a placed record: it goes to its
// partition, down or not, as a keyed one does.
func (p placingTopic) RequiresConsistency(r *kgo.Record) bool {
	if _, ok := PlacedOf(r); ok {
		return true
	}
	return p.keyed.RequiresConsistency(r)
}

// Partition is never called: franz-go calls PartitionByBackup.
func (p placingTopic) Partition(r *kgo.Record, n int) int {
	if at, ok := PlacedOf(r); ok {
		return int(at)
	}
	return p.keyed.Partition(r, n)
}

// PartitionByBackup is the placed record's partition, else the keyed
// partitioner's choice. A partition of n or more fails the record with
// franz-go's "invalid record partitioning choice" ([Unplaceable]).
func (p placingTopic) PartitionByBackup(r *kgo.Record, n int, it kgo.TopicBackupIter) int {
	if at, ok := PlacedOf(r); ok {
		return int(at)
	}
	return p.keyed.PartitionByBackup(r, n, it)
}
