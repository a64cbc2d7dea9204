package sink

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Compressions returns the codecs a batch may be compressed with, as
// --kafka-compression and the config file's kafka.compression name them:
// none first, the default.
func Compressions() []string { return []string{"none", "gzip", "snappy", "lz4", "zstd"} }

// ParseCompression returns the codec that name names (one of
// [Compressions]; "" is none), or an error naming the choices.
func ParseCompression(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "", "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("unknown Kafka compression %q: want one of %s", name, strings.Join(Compressions(), ", "))
}

// DefaultBatchMaxBytes is the default of [Config.BatchMaxBytes]: Kafka's
// default message.max.bytes for a topic.
const DefaultBatchMaxBytes = 1000012

// MinBatchMaxBytes and MaxBatchMaxBytes bound [Config.BatchMaxBytes]:
// 1 KiB, and franz-go's largest write to a broker (100 MiB, which is also
// a broker's default socket.request.max.bytes).
const (
	MinBatchMaxBytes = 1 << 10
	MaxBatchMaxBytes = 100 << 20
)

// CheckBatchMaxBytes returns an error when n is outside
// [MinBatchMaxBytes, MaxBatchMaxBytes]; 0 is the default and passes.
func CheckBatchMaxBytes(n int) error {
	if n == 0 || (n >= MinBatchMaxBytes && n <= MaxBatchMaxBytes) {
		return nil
	}
	return fmt.Errorf("Kafka batch size %d bytes is out of range: want %d (1 KiB) to %d (100 MiB), and no more than the brokers' message.max.bytes (default %d)",
		n, MinBatchMaxBytes, MaxBatchMaxBytes, DefaultBatchMaxBytes)
}

// batchMaxBytes is cfg's batch size, its default when unset.
func (cfg Config) batchMaxBytes() int {
	if cfg.BatchMaxBytes == 0 {
		return DefaultBatchMaxBytes
	}
	return cfg.BatchMaxBytes
}

// BatchMaxBytes is the most bytes of records, before compression, that
// the producer puts in one batch ([Config.BatchMaxBytes]). A record
// larger than this fails at once with MESSAGE_TOO_LARGE without reaching
// the broker: franz-go measures a batch before it compresses it, and sends
// it uncompressed when compressing does not make it smaller, so a batch
// never reaches the broker larger than this.
func (s *Sink) BatchMaxBytes() int { return s.batchMax }
