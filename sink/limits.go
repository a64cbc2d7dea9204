package sink

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The wire overhead of a record batch around its records: Kafka measures
// a batch against a topic's max.message.bytes with its 61-byte header;
// franz-go measures it against the producer's batch limit with the
// 4-byte length of the records' bytes before it too.
const (
	batchHeaderBytes   = 61
	producerBatchBytes = batchHeaderBytes + 4
)

// How long a topic's described max.message.bytes is trusted, and how long
// the first record of a topic waits for its description.
const (
	topicLimitTTL      = 5 * time.Minute
	topicLimitFirstFor = 2 * time.Second
)

// BatchBytesAlone is the size of r in a record batch of its own, as a
// broker measures it against max.message.bytes, uncompressed: the batch
// header and the record as franz-go encodes it (the first of its batch:
// offset and timestamp deltas 0).
func BatchBytesAlone(r *kgo.Record) int {
	l := 1 + 1 + 1 + // attributes, timestamp delta, offset delta
		kbin.VarintLen(int32(len(r.Key))) + len(r.Key) +
		kbin.VarintLen(int32(len(r.Value))) + len(r.Value) +
		kbin.VarintLen(int32(len(r.Headers)))
	for _, h := range r.Headers {
		l += kbin.VarintLen(int32(len(h.Key))) + len(h.Key) + kbin.VarintLen(int32(len(h.Value))) + len(h.Value)
	}
	return batchHeaderBytes + kbin.VarintLen(int32(l)) + l
}

// topicLimits caches each topic's max.message.bytes, described from the
// brokers: a topic is described on its first record (which waits up to
// topicLimitFirstFor), again in the background once its description is
// topicLimitTTL old or a refusal said it may have changed (forget).
// Safe for concurrent use; a lookup of a described topic is a sync.Map
// load and two atomic loads.
type topicLimits struct {
	describe func(ctx context.Context, topic string) (int, bool, error)
	byTopic  sync.Map // topic → *topicLimit
	// failed, if set, hears of the first time Kafka refused to describe
	// a topic (the relay's principal may not: no check of its records'
	// size).
	failed func(topic string, err error)
}

// topicLimit is one topic's limit: limit is max.message.bytes, or 0 when
// none is known (not described yet, or the describe failed).
type topicLimit struct {
	limit     atomic.Int64
	expires   atomic.Int64  // UnixNano after which it is described again
	refreshed chan struct{} // closed once the first description ended
	busy      atomic.Bool   // a description is under way
	said      atomic.Bool   // a failed description was told to failed
	lookups   atomic.Uint32 // get's lookups, for reading the clock now and then
	described atomic.Int64  // UnixNano of the last description's end
}

// newTopicLimit is a topic's entry before its first description, which
// the caller that stored it starts.
func newTopicLimit() *topicLimit {
	tl := &topicLimit{refreshed: make(chan struct{})}
	tl.busy.Store(true)
	return tl
}

// get returns topic's max.message.bytes, 0 if none is known.
func (t *topicLimits) get(topic string) int {
	v, ok := t.byTopic.Load(topic)
	if !ok {
		v, ok = t.byTopic.LoadOrStore(topic, newTopicLimit())
		tl := v.(*topicLimit)
		if !ok {
			go t.refresh(topic, tl)
		}
		select {
		case <-tl.refreshed:
		case <-time.After(topicLimitFirstFor):
		}
		return int(tl.limit.Load())
	}
	tl := v.(*topicLimit)
	// The clock is read every expiryEvery lookups, not each: a lookup is
	// on the stream's path, once per record.
	if tl.lookups.Add(1)%expiryEvery == 0 || tl.expires.Load() == 0 {
		if time.Now().UnixNano() > tl.expires.Load() && tl.busy.CompareAndSwap(false, true) {
			go t.refresh(topic, tl)
		}
	}
	return int(tl.limit.Load())
}

// expiryEvery is how many lookups of a topic's limit read the clock once
// to see whether the limit is due to be described again.
const expiryEvery = 256

// peek returns topic's max.message.bytes if it is known, 0 otherwise,
// without waiting: a topic not described yet is described in the
// background.
func (t *topicLimits) peek(topic string) int {
	v, ok := t.byTopic.Load(topic)
	if !ok {
		v, ok = t.byTopic.LoadOrStore(topic, newTopicLimit())
		if !ok {
			go t.refresh(topic, v.(*topicLimit))
		}
	}
	return int(v.(*topicLimit).limit.Load())
}

// freshen describes topic again now, waiting for the answer, unless its
// last description is under a second old or one is under way: a limit
// that refused a record may have been raised since (the record's retry).
func (t *topicLimits) freshen(topic string) {
	v, ok := t.byTopic.Load(topic)
	if !ok {
		return
	}
	tl := v.(*topicLimit)
	if time.Since(time.Unix(0, tl.described.Load())) < time.Second || !tl.busy.CompareAndSwap(false, true) {
		return
	}
	t.refresh(topic, tl)
}

// forget makes topic's limit described again on its next record.
func (t *topicLimits) forget(topic string) {
	if v, ok := t.byTopic.Load(topic); ok {
		v.(*topicLimit).expires.Store(0)
	}
}

// refresh describes topic into tl. A failed or empty description leaves
// no limit known (0), and is tried again after a tenth of the TTL.
func (t *topicLimits) refresh(topic string, tl *topicLimit) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	limit, ok, err := t.describe(ctx, topic)
	ttl := topicLimitTTL
	switch {
	case err != nil || !ok:
		tl.limit.Store(0)
		ttl /= 10
		if refusedToDescribe(err) && t.failed != nil && tl.said.CompareAndSwap(false, true) {
			t.failed(topic, err)
		}
	default:
		tl.limit.Store(int64(limit))
	}
	tl.expires.Store(time.Now().Add(ttl).UnixNano())
	tl.described.Store(time.Now().UnixNano())
	tl.busy.Store(false)
	select {
	case <-tl.refreshed:
	default:
		close(tl.refreshed)
	}
}

// refusedToDescribe reports whether err is Kafka refusing the relay's
// principal the description of a topic's configs (its ACLs), rather than
// a broker not answering.
func refusedToDescribe(err error) bool {
	return errors.Is(err, kerr.TopicAuthorizationFailed) || errors.Is(err, kerr.ClusterAuthorizationFailed)
}

// describeMaxMessageBytes reads topic's max.message.bytes (the topic's
// own, or the brokers' default it inherits); ok is false when the topic
// does not exist or the answer has none.
func (s *Sink) describeMaxMessageBytes(ctx context.Context, topic string) (int, bool, error) {
	rcs, err := kadm.NewClient(s.cl).DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return 0, false, err
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		return 0, false, err
	}
	if errors.Is(rc.Err, kerr.UnknownTopicOrPartition) {
		return 0, false, nil // not created yet: described again later
	}
	if rc.Err != nil {
		return 0, false, rc.Err
	}
	for _, c := range rc.Configs {
		if c.Key == "max.message.bytes" && c.Value != nil {
			n, err := strconv.Atoi(*c.Value)
			return n, err == nil && n > 0, nil
		}
	}
	return 0, false, nil
}

// Refuses returns the error Kafka would fail r with, MESSAGE_TOO_LARGE,
// when r alone is too large to be delivered: larger than the producer's
// batch limit (Config.BatchMaxBytes, as franz-go counts a record in a
// batch of its own), or, without compression, than its topic's
// max.message.bytes (described from the brokers, cached per topic, read
// again every few minutes and after [Sink.SizeRefused]). Nil when r may
// be delivered, or when no limit of its topic is known (the topic does
// not exist yet, or the relay may not describe it): Kafka then answers
// for itself. The error wraps kerr.MessageTooLarge and says the size,
// the limit, where the limit comes from and how to raise it.
//
// A record's first call for a topic may wait up to 2 s for the topic's
// description; the others do not wait. Safe for concurrent use.
func (s *Sink) Refuses(r *kgo.Record) error {
	return s.refuses(r, false)
}

// RefusesNow is Refuses for a record tried again (the poller's): before
// it refuses r for its topic's max.message.bytes, it describes the topic
// again (waiting for the answer, at most once a second per topic), so
// that a limit raised since r was refused lets it go at once, not after
// the cached limit's few minutes.
func (s *Sink) RefusesNow(r *kgo.Record) error {
	return s.refuses(r, true)
}

func (s *Sink) refuses(r *kgo.Record, fresh bool) error {
	size := BatchBytesAlone(r)
	if size+producerBatchBytes-batchHeaderBytes > s.batchMax {
		return fmt.Errorf("%w: the record is %d bytes in a batch of its own, above the relay's producer batch limit of %d bytes: "+
			"raise --kafka-batch-max-bytes (up to the topic's max.message.bytes and the brokers' message.max.bytes) "+
			"or make the event smaller, then retry it (`cdc-relay failed retry`)", kerr.MessageTooLarge, size+producerBatchBytes-batchHeaderBytes, s.batchMax)
	}
	if s.compressed || s.limits == nil {
		return nil // compressed, it may fit: Kafka answers
	}
	limit := s.limits.get(r.Topic)
	if fresh && limit > 0 && size > limit {
		s.limits.freshen(r.Topic)
		limit = s.limits.get(r.Topic)
	}
	if limit > 0 && size > limit {
		return fmt.Errorf("%w: the record is %d bytes in a batch of its own, above topic %s's max.message.bytes of %d bytes: "+
			"raise the topic's max.message.bytes (kafka-configs --alter --entity-type topics --entity-name %s --add-config max.message.bytes=N) "+
			"or make the event smaller, then retry it (`cdc-relay failed retry`)", kerr.MessageTooLarge, size, r.Topic, limit, r.Topic)
	}
	return nil
}

// LimitsMayHaveChanged tells the sink that an operator may have raised
// a topic's max.message.bytes (they retried events): the next RefusesNow
// that a topic's limit refuses describes the topic again first, however
// recently it was described.
func (s *Sink) LimitsMayHaveChanged() {
	if s.limits != nil {
		s.limits.byTopic.Range(func(_, v any) bool {
			v.(*topicLimit).described.Store(0)
			return true
		})
	}
}

// SizeRefused tells the sink that Kafka refused a record of topic as too
// large: the topic's max.message.bytes may have changed, and is described
// again on its next record.
func (s *Sink) SizeRefused(topic string) {
	if s.limits != nil {
		s.limits.forget(topic)
	}
}

// batchCap is the producer's batch limit for topic's partitions, which
// franz-go asks once as it meets each partition: without compression,
// no more than the topic's max.message.bytes when it is known by then
// (Refuses described it before the topic's first record was produced),
// so that Kafka never refuses a batch for its size, failing every record
// in it and behind it in the partition; otherwise Config.BatchMaxBytes.
func (s *Sink) batchCap(topic string) int32 {
	limit := s.batchMax
	if topic != "" && !s.compressed && s.limits != nil {
		if t := s.limits.peek(topic); t > 0 {
			// franz-go counts the 4 bytes of the records' length too.
			limit = min(limit, max(t+producerBatchBytes-batchHeaderBytes, 512))
		}
	}
	return int32(limit)
}
