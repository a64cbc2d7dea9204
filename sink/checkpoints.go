package sink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
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

// Checkpoint is a slot's position in the checkpoint topic: the record's
// key is the slot, its value the rest, as JSON.
type Checkpoint struct {
	Slot string `json:"slot"`
	// LSN is the end of the last PostgreSQL transaction whose records the
	// Kafka transaction holds.
	LSN pglogrepl.LSN `json:"-"`
	// SystemID and Database name the database the slot is in (the
	// server's system identifier and the database's name): a slot of the
	// same name in another database is another slot.
	SystemID string `json:"system_id"`
	Database string `json:"database"`
	// Stream is the stream the position belongs to: the id the relay
	// stores with the slot's checkpoint row, new whenever it creates the
	// slot. A database copied from this one (a restored backup, a clone)
	// has the same SystemID and Database but, its slot created anew,
	// another Stream. Records of earlier versions have none ("").
	Stream string `json:"stream"`
	// Timeline is the server's timeline when the relay wrote the record
	// (IDENTIFY_SYSTEM). A standby promoted after it missed some of the
	// old primary's WAL keeps the slot and the stream, but its timeline
	// reuses the positions after its switch point for other transactions:
	// a position written on an earlier timeline past that point is not
	// this server's. Records of earlier versions have none (0).
	Timeline int32 `json:"timeline"`
	// Written is when the relay produced the record.
	Written time.Time `json:"written"`
	// CommitTime is when the PostgreSQL transaction that ends at LSN
	// committed, for the checkpoint row (see checkpoint.Position); zero in
	// records of earlier versions.
	CommitTime time.Time `json:"commit_time,omitzero"`
}

// checkpointJSON is a Checkpoint as the topic holds it, with the LSN as
// PostgreSQL writes it (0/16B3748).
type checkpointJSON struct {
	Checkpoint
	LSN string `json:"lsn"`
}

// SameDatabase reports whether cp was written for the database of other;
// a checkpoint written without one (an empty SystemID) is taken to be.
func (cp Checkpoint) SameDatabase(other Checkpoint) bool {
	return cp.SystemID == "" || cp.SystemID == other.SystemID && cp.Database == other.Database
}

// CheckpointRecord returns the record that says the slot's events up to
// cp.LSN (a transaction's end) are in Kafka: produce it in the same
// transaction as those events.
func CheckpointRecord(topic string, cp Checkpoint) *kgo.Record {
	cp.Written = time.Now().UTC()
	v, _ := json.Marshal(checkpointJSON{Checkpoint: cp, LSN: cp.LSN.String()})
	return &kgo.Record{Topic: topic, Key: []byte(cp.Slot), Value: v}
}

// EnsureCheckpointTopic creates the checkpoint topic, compacted, with one
// partition and the brokers' default replication factor, unless it exists.
// It reports whether it created it. An existing topic that is not
// compacted is an error: its records would be deleted by age, and with
// them the position. A principal without CREATE (the topic created by an
// administrator) or without DESCRIBE_CONFIGS (its policy not checked) is
// fine.
func (s *Sink) EnsureCheckpointTopic(ctx context.Context, topic string) (created bool, err error) {
	adm := kadm.NewClient(s.cl)
	_, err = adm.CreateTopic(ctx, 1, -1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, topic)
	switch {
	case err == nil:
		return true, nil
	case authorization(err):
		// A principal without CREATE is refused whether the topic exists
		// or not: it may exist, created by an administrator.
		if exists, lerr := topicExists(ctx, adm, topic); lerr != nil || !exists {
			return false, fmt.Errorf("create the checkpoint topic %q: %w (create it with cleanup.policy=compact, or grant the relay's principal CREATE on it)", topic, err)
		}
	case !errors.Is(err, kerr.TopicAlreadyExists):
		return false, fmt.Errorf("create the checkpoint topic %q: %w (create it yourself with cleanup.policy=compact, or grant the relay's principal CREATE on it)", topic, err)
	}
	described, err := adm.DescribeTopicConfigs(ctx, topic)
	var rc kadm.ResourceConfig
	if err == nil {
		rc, err = described.On(topic, nil)
	}
	if err == nil {
		err = rc.Err
	}
	switch {
	case authorization(err):
		return false, nil // without DESCRIBE_CONFIGS, its cleanup policy is the administrator's business
	case err != nil:
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

// authorization reports whether err is Kafka refusing the principal.
func authorization(err error) bool {
	return errors.Is(err, kerr.TopicAuthorizationFailed) || errors.Is(err, kerr.ClusterAuthorizationFailed)
}

// topicExists reports whether the brokers know topic.
func topicExists(ctx context.Context, adm *kadm.Client, topic string) (bool, error) {
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return false, err
	}
	for p, o := range ends[topic] {
		if o.Err == nil && p >= 0 {
			return true, nil
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

// ReadCheckpoint returns the slot's position in the checkpoint topic: its
// last record, as compaction keeps it, even when it is behind an earlier
// one (another stream's, see [Checkpoint.Stream]); should the topic have
// several partitions, the highest of theirs. It returns false when the
// topic holds none. With committed, it reads as a read_committed
// consumer: every partition up to the end offset it finds when it starts,
// so it waits for the transactions open then (other slots' relays) to end,
// at most their transaction timeout, and a position committed just before
// it started is never missed; call it so after [Sink.InitTransactions],
// which aborts what an earlier producer of this slot left open. Without
// committed, it also sees what was written in transactions not (or not
// yet) committed, and never waits for them.
func (s *Sink) ReadCheckpoint(ctx context.Context, topic, slot string, committed bool) (Checkpoint, bool, error) {
	from, last, err := s.checkpointRange(ctx, topic)
	if err != nil || len(from) == 0 {
		return Checkpoint{}, false, err
	}
	opts := append(s.base[:len(s.base):len(s.base)],
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}),
		// The end offset counts the commit markers: keep them, to know
		// when the last one is read.
		kgo.KeepControlRecords(),
	)
	if committed {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("read the checkpoint topic %q: %w", topic, err)
	}
	defer cl.Close()
	newest := map[int32]Checkpoint{} // the slot's last record, per partition
	var skipped skippedRecords
	defer skipped.warn(s.log, topic, slot)
	for len(last) > 0 {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return Checkpoint{}, false, fmt.Errorf("read the checkpoint topic %q: %d partitions not read to their end (a transaction of another relay still open?): %w", topic, len(last), ctx.Err())
		}
		var ferr error
		fetches.EachError(func(_ string, p int32, err error) {
			if ferr == nil {
				ferr = fmt.Errorf("read the checkpoint topic %q, partition %d: %w", topic, p, err)
			}
		})
		fetches.EachRecord(func(r *kgo.Record) {
			if end, ok := last[r.Partition]; ok && r.Offset >= end {
				delete(last, r.Partition)
			}
			if ferr != nil || r.Attrs.IsControl() || string(r.Key) != slot {
				return
			}
			cp, err := decodeCheckpoint(r)
			if err != nil {
				// Not one the relay wrote: it never counts as a position,
				// and must not stop every start until compaction.
				skipped.add(r, err)
				return
			}
			newest[r.Partition] = cp // a partition keeps them in order
		})
		if ferr != nil {
			return Checkpoint{}, false, ferr
		}
	}
	cp, found := highest(newest)
	return cp, found, nil
}

// skippedRecords counts the records keyed by the slot that are not
// checkpoints, and keeps the first for the warning.
type skippedRecords struct {
	n         int
	partition int32
	offset    int64
	err       error
}

// add counts r, which did not decode (err).
func (k *skippedRecords) add(r *kgo.Record, err error) {
	if k.n == 0 {
		k.partition, k.offset, k.err = r.Partition, r.Offset, err
	}
	k.n++
}

// warn logs one line for the skipped records, if any.
func (k *skippedRecords) warn(log *slog.Logger, topic, slot string) {
	if k.n == 0 {
		return
	}
	log.Warn("the checkpoint topic holds records keyed by the slot that are not checkpoints (not written by the relay); they are skipped, and the relay's own last position is taken. "+
		"Find who produces to the topic: only the relay should (Kafka ACLs)",
		"topic", topic, "slot", slot, "records", k.n, "first_partition", k.partition, "first_offset", k.offset, "err", k.err)
}

// checkpointRange returns where to start reading each partition of the
// checkpoint topic that holds records, and the last offset to read.
func (s *Sink) checkpointRange(ctx context.Context, topic string) (map[int32]kgo.Offset, map[int32]int64, error) {
	adm := kadm.NewClient(s.cl)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read the checkpoint topic %q: list its start offsets: %w", topic, err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read the checkpoint topic %q: list its end offsets: %w", topic, err)
	}
	from := map[int32]kgo.Offset{}
	last := map[int32]int64{}
	for p, end := range ends[topic] {
		start := starts[topic][p].Offset
		if end.Offset > start {
			from[p] = kgo.NewOffset().At(start)
			last[p] = end.Offset - 1
		}
	}
	return from, last, nil
}

// decodeCheckpoint reads a record of the checkpoint topic.
func decodeCheckpoint(r *kgo.Record) (Checkpoint, error) {
	var v checkpointJSON
	if err := json.Unmarshal(r.Value, &v); err != nil {
		return Checkpoint{}, err
	}
	l, err := pglogrepl.ParseLSN(v.LSN)
	if err != nil {
		return Checkpoint{}, err
	}
	v.Checkpoint.LSN = l
	return v.Checkpoint, nil
}

// highest returns the checkpoint with the highest position of the
// partitions' last ones (partitions added later could hold an older one
// than another), and false when there is none.
func highest(newest map[int32]Checkpoint) (Checkpoint, bool) {
	var (
		cp    Checkpoint
		found bool
	)
	for _, c := range newest {
		if !found || c.LSN > cp.LSN {
			cp, found = c, true
		}
	}
	return cp, found
}
