package main

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/cdc-relay/cdc-relay/sink"
)

// producerFlagNames are the Kafka producer's flags, in the order usage
// lists them.
var producerFlagNames = []string{"kafka-client-id", "kafka-linger", "kafka-batch-max-bytes", "kafka-compression", "kafka-create-topics"}

// registerProducerFlags registers the producer's batch size and
// compression on fs, into cfg.
func registerProducerFlags(fs *flag.FlagSet, cfg *sink.Config) {
	if cfg.Compression == "" {
		cfg.Compression = "none"
	}
	if cfg.BatchMaxBytes == 0 {
		cfg.BatchMaxBytes = sink.DefaultBatchMaxBytes
	}
	fs.Var((*compressionValue)(&cfg.Compression), "kafka-compression",
		"the `codec` of every batch sent to Kafka: "+strings.Join(sink.Compressions(), ", ")+
			"; consumers decompress it themselves, and a batch that compression does not make smaller is sent as it is")
	fs.Var((*batchBytesValue)(&cfg.BatchMaxBytes), "kafka-batch-max-bytes",
		fmt.Sprintf("at most `n` bytes of records, before compression, in one batch to one partition (%d to %d); "+
			"must not exceed the brokers' message.max.bytes (or the topic's max.message.bytes), or such batches are refused and their records sent again one at a time; "+
			"a record larger than this is parked in the status table", sink.MinBatchMaxBytes, sink.MaxBatchMaxBytes))
}

// compressionValue is --kafka-compression: one of sink.Compressions.
type compressionValue string

func (c *compressionValue) Set(s string) error {
	s = strings.ToLower(strings.TrimSpace(s))
	if _, err := sink.ParseCompression(s); err != nil {
		return fmt.Errorf("not a codec: want one of %s", strings.Join(sink.Compressions(), ", "))
	}
	*c = compressionValue(s)
	return nil
}

func (c *compressionValue) String() string { return string(*c) }

// batchBytesValue is --kafka-batch-max-bytes: a byte count in the
// producer's range.
type batchBytesValue int

func (b *batchBytesValue) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return errors.New("not a number of bytes, such as 1000012")
	}
	if n == 0 {
		return fmt.Errorf("want %d to %d bytes", sink.MinBatchMaxBytes, sink.MaxBatchMaxBytes)
	}
	if err := sink.CheckBatchMaxBytes(n); err != nil {
		return fmt.Errorf("want %d to %d bytes, and no more than the brokers' message.max.bytes", sink.MinBatchMaxBytes, sink.MaxBatchMaxBytes)
	}
	*b = batchBytesValue(n)
	return nil
}

func (b *batchBytesValue) String() string { return strconv.Itoa(int(*b)) }

// batchBytesText is a config file's batch size as its flag's value: ""
// when the file leaves it out.
func batchBytesText(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}
