package sink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultCheckpointTopic is the compacted topic where exactly-once delivery
// keeps each slot's position, committed in the same Kafka transaction as
// the records up to it.
const DefaultCheckpointTopic = "cdc-relay.checkpoints"

// checkpointValue is a checkpoint record's value. The key is the slot's
// name.
type checkpointValue struct {
	Slot string `json:"slot"`
	// LSN is the end of the last PostgreSQL transaction whose records the
	// Kafka transaction holds, as PostgreSQL writes it (0/16B3748).
	LSN string `json:"lsn"`
	// Written is when the relay produced the record.
	Written time.Time `json:"written"`
}

// CheckpointRecord returns the record that says the slot's events up to
// lsn (a transaction's end) are in Kafka: produce it in the same
// transaction as those events.
func CheckpointRecord(topic, slot string, lsn pglogrepl.LSN) *kgo.Record {
	v, _ := json.Marshal(checkpointValue{Slot: slot, LSN: lsn.String(), Written: time.Now().UTC()})
	return &kgo.Record{Topic: topic, Key: []byte(slot), Value: v}
}

// EnsureCheckpointTopic creates the checkpoint topic, compacted, with one
// partition and the brokers' default replication factor, unless it exists.
// It reports whether it created it. An existing topic that is not
// compacted is an error: its records would be deleted by age, and with
// them the position.
func (s *Sink) EnsureCheckpointTopic(ctx context.Context, topic string) (created bool, err error) {
	adm := kadm.NewClient(s.cl)
	_, err = adm.CreateTopic(ctx, 1, -1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, topic)
	switch {
	case err == nil:
		return true, nil
	case !errors.Is(err, kerr.TopicAlreadyExists):
		return false, fmt.Errorf("create the checkpoint topic %q: %w (create it yourself with cleanup.policy=compact, or grant the relay's principal CREATE on it)", topic, err)
	}
	described, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return false, fmt.Errorf("describe the checkpoint topic %q: %w", topic, err)
	}
	rc, err := described.On(topic, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		return false, fmt.Errorf("describe the checkpoint topic %q: %w", topic, err)
	}
	for _, c := range rc.Configs {
		if c.Key == "cleanup.policy" && c.Value != nil && !containsWord(*c.Value, "compact") {
			return false, fmt.Errorf("the checkpoint topic %q has cleanup.policy=%s: its positions would be deleted by age; "+
				"set cleanup.policy=compact on it (kafka-configs.sh --alter --add-config cleanup.policy=compact)", topic, *c.Value)
		}
	}
	return false, nil
}

// containsWord reports whether the comma-separated list s holds w.
func containsWord(s, w string) bool {
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != ',' {
			i++
		}
		if s[:i] == w {
			return true
		}
		if i == len(s) {
			break
		}
		s = s[i+1:]
	}
	return false
}

// ReadCheckpoint returns the slot's last committed position in the
// checkpoint topic, as a read_committed consumer sees it, and false when
// the topic holds none. It reads every partition up to the end offset it
// finds when it starts, so it waits for the transactions open then (other
// slots' relays) to end, at most their transaction timeout: a position
// committed just before it started is never missed. Call it after
// [Sink.InitTransactions], which aborts what an earlier producer of this
// slot left open.
func (s *Sink) ReadCheckpoint(ctx context.Context, topic, slot string) (pglogrepl.LSN, bool, error) {
	adm := kadm.NewClient(s.cl)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return 0, false, fmt.Errorf("read the checkpoint topic %q: list its start offsets: %w", topic, err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return 0, false, fmt.Errorf("read the checkpoint topic %q: list its end offsets: %w", topic, err)
	}
	from := map[int32]kgo.Offset{}
	last := map[int32]int64{} // the last offset to read, per partition
	for p, end := range ends[topic] {
		start := starts[topic][p].Offset
		if end.Offset > start {
			from[p] = kgo.NewOffset().At(start)
			last[p] = end.Offset - 1
		}
	}
	if len(from) == 0 {
		return 0, false, nil
	}
	opts := append(s.base[:len(s.base):len(s.base)],
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// The end offset counts the commit markers: keep them, to know
		// when the last one is read.
		kgo.KeepControlRecords(),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return 0, false, fmt.Errorf("read the checkpoint topic %q: %w", topic, err)
	}
	defer cl.Close()
	var (
		lsn   pglogrepl.LSN
		found bool
	)
	for len(last) > 0 {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return 0, false, fmt.Errorf("read the checkpoint topic %q: %d partitions not read to their end (a transaction of another relay still open?): %w", topic, len(last), ctx.Err())
		}
		var ferr error
		fetches.EachError(func(_ string, p int32, err error) {
			if ferr == nil {
				ferr = fmt.Errorf("read the checkpoint topic %q, partition %d: %w", topic, p, err)
			}
		})
		if ferr != nil {
			return 0, false, ferr
		}
		var perr error
		fetches.EachRecord(func(r *kgo.Record) {
			if end, ok := last[r.Partition]; ok && r.Offset >= end {
				delete(last, r.Partition)
			}
			if r.Attrs.IsControl() || string(r.Key) != slot {
				return
			}
			var v checkpointValue
			if err := json.Unmarshal(r.Value, &v); err != nil {
				perr = fmt.Errorf("checkpoint topic %q, partition %d, offset %d: %w", topic, r.Partition, r.Offset, err)
				return
			}
			l, err := pglogrepl.ParseLSN(v.LSN)
			if err != nil {
				perr = fmt.Errorf("checkpoint topic %q, partition %d, offset %d: %w", topic, r.Partition, r.Offset, err)
				return
			}
			lsn, found = l, true // the topic keeps them in order: the last wins
		})
		if perr != nil {
			return 0, false, perr
		}
	}
	return lsn, found, nil
}
