package sink

import "github.com/twmb/franz-go/pkg/kgo"

// stickyBytes is how many bytes of records without a key go to one
// partition before the partitioner picks another (franz-go's default).
const stickyBytes = 64 << 10

// partitioner is the producer's partitioner, stated here so that an
// upgrade of franz-go cannot move keys: a record with a key (an empty key
// too) goes to [Partition], where Kafka's Java producer puts it; a record
// without one goes to a partition that changes every stickyBytes,
// preferring the partitions with the least buffered, as the Java
// producer's uniform sticky partitioner does (KIP-794).
func partitioner() kgo.Partitioner {
	return kgo.UniformBytesPartitioner(stickyBytes, true, true, kgo.KafkaHasher(murmur2))
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
