package sink

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func newCluster(t *testing.T) []string {
	t.Helper()
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	return kc.ListenAddrs()
}

func newTxnSink(t *testing.T, brokers []string, id string) *Sink {
	t.Helper()
	s, err := New(Config{Brokers: brokers, TransactionalID: id, AutoCreateTopics: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// commitCheckpoint produces an event and the checkpoint lsn in one
// transaction, and commits it (or aborts it when abort is set). Its commit
// time is commitTimeOf(lsn).
func commitCheckpoint(ctx context.Context, s *Sink, topic string, lsn pglogrepl.LSN, abort bool) error {
	if err := s.Begin(); err != nil {
		return err
	}
	errs := s.ProduceWait(ctx, []*kgo.Record{{Topic: "events", Value: []byte(lsn.String())}, CheckpointRecord(topic, Checkpoint{Slot: "slot_a", LSN: lsn, CommitTime: commitTimeOf(lsn)})})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	if abort {
		if err := s.cl.Flush(ctx); err != nil {
			return err
		}
		return s.cl.EndTransaction(ctx, kgo.TryAbort)
	}
	return s.Commit(ctx)
}

// commitTimeOf is the commit time commitCheckpoint gives lsn.
func commitTimeOf(lsn pglogrepl.LSN) time.Time { return time.Unix(int64(lsn), 0).UTC() }

// TestCheckpointTopic: the checkpoint read back is the last one committed,
// never one aborted, and other slots' records do not count.
func TestCheckpointTopic(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	brokers := newCluster(t)
	s := newTxnSink(t, brokers, "cdc-relay.slot_a")
	const topic = "checkpoints"
	if created, err := s.EnsureCheckpointTopic(ctx, topic); err != nil || !created {
		t.Fatalf("EnsureCheckpointTopic = %v, %v; want created", created, err)
	}
	if created, err := s.EnsureCheckpointTopic(ctx, topic); err != nil || created {
		t.Fatalf("EnsureCheckpointTopic again = %v, %v; want it found", created, err)
	}
	if err := s.InitTransactions(ctx); err != nil {
		t.Fatal(err)
	}
	if _, found, err := s.ReadCheckpoint(ctx, topic, "slot_a", true); err != nil || found {
		t.Fatalf("empty topic: found %v, err %v", found, err)
	}
	for _, lsn := range []pglogrepl.LSN{0x1000, 0x2000} {
		if err := commitCheckpoint(ctx, s, topic, lsn, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := commitCheckpoint(ctx, s, topic, 0x3000, true); err != nil {
		t.Fatal(err)
	}
	// Another slot's relay, with its own transactional id.
	other := newTxnSink(t, brokers, "cdc-relay.slot_b")
	if err := other.InitTransactions(ctx); err != nil {
		t.Fatal(err)
	}
	if err := other.Begin(); err == nil {
		if errs := other.ProduceWait(ctx, []*kgo.Record{CheckpointRecord(topic, Checkpoint{Slot: "slot_b", LSN: 0x9000})}); errs[0] != nil {
			t.Fatal(errs[0])
		}
		if err := other.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cp, found, err := s.ReadCheckpoint(ctx, topic, "slot_a", true)
	if err != nil || !found || cp.LSN != 0x2000 || !cp.CommitTime.Equal(commitTimeOf(0x2000)) {
		t.Fatalf("ReadCheckpoint = %s committed %v, %v, %v; want 0/2000 (the last committed) with its commit time, true", cp.LSN, cp.CommitTime, found, err)
	}
	// Uncommitted, the aborted one counts too.
	if cp, _, err := s.ReadCheckpoint(ctx, topic, "slot_a", false); err != nil || cp.LSN != 0x3000 {
		t.Fatalf("ReadCheckpoint uncommitted = %s, %v; want 0/3000", cp.LSN, err)
	}
}

// TestFencedBySecondProducer: a producer initialised later with the same
// transactional id fences the first, whose commit then fails with an error
// Fenced recognises.
func TestFencedBySecondProducer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	brokers := newCluster(t)
	const topic = "checkpoints"
	first := newTxnSink(t, brokers, "cdc-relay.slot_a")
	if _, err := first.EnsureCheckpointTopic(ctx, topic); err != nil {
		t.Fatal(err)
	}
	if err := first.InitTransactions(ctx); err != nil {
		t.Fatal(err)
	}
	if err := commitCheckpoint(ctx, first, topic, 0x1000, false); err != nil {
		t.Fatal(err)
	}
	if err := first.Begin(); err != nil {
		t.Fatal(err)
	}
	if errs := first.ProduceWait(ctx, []*kgo.Record{CheckpointRecord(topic, Checkpoint{Slot: "slot_a", LSN: 0x2000})}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	second := newTxnSink(t, brokers, "cdc-relay.slot_a")
	if err := second.InitTransactions(ctx); err != nil {
		t.Fatal(err)
	}
	err := first.Commit(ctx)
	if err == nil {
		t.Fatal("the fenced producer committed")
	}
	if !Fenced(err) {
		t.Fatalf("commit: %v; want a fencing error", err)
	}
	// The fenced transaction's checkpoint never became visible.
	cp, found, err := second.ReadCheckpoint(ctx, topic, "slot_a", true)
	if err != nil || !found || cp.LSN != 0x1000 {
		t.Fatalf("ReadCheckpoint = %s, %v, %v; want 0/1000", cp.LSN, found, err)
	}
}

// TestCheckpointTopicMustBeCompacted: a topic of that name that deletes by
// age is refused with what to do.
func TestCheckpointTopicMustBeCompacted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	brokers := newCluster(t)
	s := newTxnSink(t, brokers, "x")
	if _, err := kadm.NewClient(s.cl).CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("delete")}, "checkpoints"); err != nil {
		t.Fatal(err)
	}
	_, err := s.EnsureCheckpointTopic(ctx, "checkpoints")
	if err == nil || !strings.Contains(err.Error(), "cleanup.policy=compact") {
		t.Fatalf("got %v, want an error saying to set cleanup.policy=compact", err)
	}
}

// TestCheckpointNamesItsDatabase: a checkpoint read back names the
// database and the stream it was written for, and only the same database
// matches; the slot's last record is its position, even behind an
// earlier one.
func TestCheckpointNamesItsDatabase(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := newTxnSink(t, newCluster(t), "x")
	if _, err := s.EnsureCheckpointTopic(ctx, "checkpoints"); err != nil {
		t.Fatal(err)
	}
	if err := s.InitTransactions(ctx); err != nil {
		t.Fatal(err)
	}
	ours := Checkpoint{Slot: "s", LSN: 0x10, SystemID: "7300000000000000001", Database: "app", Stream: "5f3c9a0e7d214b6a8c1e2f3a4b5c6d7e", Timeline: 2}
	if err := s.Begin(); err != nil {
		t.Fatal(err)
	}
	if errs := s.ProduceWait(ctx, []*kgo.Record{CheckpointRecord("checkpoints", ours)}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	if err := s.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// Read until found, within the deadline: once, in CI under load,
	// kfake listed the topic's offsets before the committed record
	// showed (found false, no error), which a relay's later start would
	// not meet.
	var cp Checkpoint
	var found bool
	var err error
	for tries := 1; ; tries++ {
		if cp, found, err = s.ReadCheckpoint(ctx, "checkpoints", "s", true); err != nil || found || ctx.Err() != nil {
			if tries > 1 {
				t.Logf("the committed checkpoint was read at the %d-th try", tries)
			}
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil || !found || cp.LSN != 0x10 || cp.SystemID != ours.SystemID || cp.Database != "app" || cp.Stream != ours.Stream || cp.Timeline != 2 {
		t.Fatalf("read %+v, %v, %v; want %+v", cp, found, err, ours)
	}
	for _, tt := range []struct {
		other Checkpoint
		same  bool
	}{
		{Checkpoint{SystemID: ours.SystemID, Database: "app"}, true},
		{Checkpoint{SystemID: ours.SystemID, Database: "billing"}, false},
		{Checkpoint{SystemID: "7300000000000000002", Database: "app"}, false},
	} {
		if got := cp.SameDatabase(tt.other); got != tt.same {
			t.Errorf("SameDatabase(%+v) = %v, want %v", tt.other, got, tt.same)
		}
	}
	if !(Checkpoint{}).SameDatabase(ours) {
		t.Error("a checkpoint without a database must match any")
	}

	// A later record is the slot's position even behind an earlier one:
	// another stream's (a copy of the database), as compaction keeps it.
	copied := ours
	copied.LSN, copied.Stream = 0x08, "0123456789abcdef0123456789abcdef"
	if err := s.Begin(); err != nil {
		t.Fatal(err)
	}
	if errs := s.ProduceWait(ctx, []*kgo.Record{CheckpointRecord("checkpoints", copied)}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	if err := s.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for _, committed := range []bool{false, true} {
		cp, found, err = s.ReadCheckpoint(ctx, "checkpoints", "s", committed)
		if err != nil || !found || cp.LSN != 0x08 || cp.Stream != copied.Stream {
			t.Fatalf("read (committed %v) %+v, %v, %v; want the last record, %+v", committed, cp, found, err, copied)
		}
	}
}

// TestReadCheckpointSkipsRecordsItCannotDecode: a record keyed by the slot
// that is not a checkpoint (an event's, or anyone's who may produce to the
// topic), even the newest, is skipped with a warning: the relay's own last
// position is read, never a failed start.
func TestReadCheckpointSkipsRecordsItCannotDecode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var logged syncLog
	brokers := newCluster(t)
	s, err := New(Config{Brokers: brokers, TransactionalID: "x", AutoCreateTopics: true, Logger: slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if _, err := s.EnsureCheckpointTopic(ctx, "checkpoints"); err != nil {
		t.Fatal(err)
	}
	if err := s.InitTransactions(ctx); err != nil {
		t.Fatal(err)
	}
	if err := commitCheckpoint(ctx, s, "checkpoints", 0x20, false); err != nil {
		t.Fatal(err)
	}
	plain := newTxnSink(t, brokers, "")
	for _, v := range []string{`"not a checkpoint"`, `{"lsn": "nowhere"}`} {
		if errs := plain.ProduceWait(ctx, []*kgo.Record{{Topic: "checkpoints", Key: []byte("slot_a"), Value: []byte(v)}}); errs[0] != nil {
			t.Fatal(errs[0])
		}
	}
	for _, committed := range []bool{false, true} {
		cp, found, err := s.ReadCheckpoint(ctx, "checkpoints", "slot_a", committed)
		if err != nil || !found || cp.LSN != 0x20 {
			t.Fatalf("read (committed %v) %+v, %v, %v; want the relay's own position 0/20", committed, cp, found, err)
		}
	}
	if !strings.Contains(logged.String(), "not checkpoints") || !strings.Contains(logged.String(), "records=2") {
		t.Errorf("no warning counting the 2 skipped records:\n%s", logged.String())
	}
}

// syncLog is a buffer a logger and the test share.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
