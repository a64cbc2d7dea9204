package audit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/backfill"
	"github.com/cdc-relay/cdc-relay/sink"
)

// topicRecords reads the records of topics from Kafka, from the time
// window's first offset (ListOffsets by timestamp) to the last stable
// offsets taken when the read begins.
type topicRecords struct {
	cfg  Config
	opts []kgo.Opt
}

// span is the offsets of one partition to read: [start, end).
type span struct{ start, end int64 }

// ReadRecords hands each committed record of topics, within the window,
// to see, each partition's in offset order, at most Config.RecordRate
// records a second. A topic that does not exist has no records. total,
// once known, is the number of offsets to read.
func (k *topicRecords) ReadRecords(ctx context.Context, topics []string, r Reads) error {
	if len(topics) == 0 {
		return nil
	}
	admCl, err := kgo.NewClient(k.opts...)
	if err != nil {
		return fmt.Errorf("create Kafka client: %w", err)
	}
	spans, err := k.spans(ctx, kadm.NewClient(admCl), topics, r.Absent)
	admCl.Close()
	if err != nil {
		return err
	}
	var n int64
	from := map[string]map[int32]kgo.Offset{}
	for t, ps := range spans {
		from[t] = map[int32]kgo.Offset{}
		for p, s := range ps {
			from[t][p] = kgo.NewOffset().At(s.start)
			n += s.end - s.start
		}
	}
	r.Total(n)
	if n == 0 {
		return nil
	}
	cl, err := kgo.NewClient(append(k.opts[:len(k.opts):len(k.opts)],
		kgo.ConsumePartitions(from),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(), // a transaction's marker may be a partition's last offset
	)...)
	if err != nil {
		return fmt.Errorf("create Kafka client: %w", err)
	}
	defer cl.Close()
	return k.consume(ctx, cl, spans, r.See)
}

// consume polls cl until every partition of spans reached its end.
func (k *topicRecords) consume(ctx context.Context, cl *kgo.Client, spans map[string]map[int32]span, see func(Record)) error {
	left := 0
	for _, ps := range spans {
		left += len(ps)
	}
	limiter := backfill.NewLimiter(k.cfg.RecordRate)
	for left > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if !kerr.IsRetriable(err) && !errors.Is(err, context.Canceled) {
				ferr = fmt.Errorf("read %s[%d]: %w", t, p, err)
			}
		})
		if ferr != nil {
			return ferr
		}
		n := 0
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			s := spans[p.Topic][p.Partition]
			for _, r := range p.Records {
				if s.end < 0 {
					break // done: a fetch already buffered
				}
				// The offset before the end may be gone (compacted, an
				// aborted transaction's record read_committed skips): a
				// record at or past the end ends the partition too.
				if r.Offset < s.end && !r.Attrs.IsControl() {
					see(recordOf(r))
					n++
				}
				if r.Offset+1 >= s.end {
					s.end = -1
					spans[p.Topic][p.Partition] = s
					cl.PauseFetchPartitions(map[string][]int32{p.Topic: {p.Partition}})
					left--
				}
			}
		})
		if err := limiter.Wait(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// recordOf is the audit's record of r.
func recordOf(r *kgo.Record) Record {
	rec := Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: r.Key}
	for _, h := range r.Headers {
		if h.Key == "id" {
			rec.ID, rec.HasID = h.Value, true
			break
		}
	}
	return rec
}

// spans are the offsets to read of each partition of topics that has
// any: from the first offset at or after Since less Margin (the start
// without Since) to the last stable offset, or the first offset at or
// after Until plus Margin when it is before.
func (k *topicRecords) spans(ctx context.Context, adm *kadm.Client, topics []string, absent func(string)) (map[string]map[int32]span, error) {
	topics, err := k.existing(ctx, adm, topics, absent)
	if err != nil || len(topics) == 0 {
		return nil, err
	}
	ends, err := adm.ListCommittedOffsets(ctx, topics...)
	if err != nil {
		return nil, k.explain(err)
	}
	var starts, untils kadm.ListedOffsets
	if k.cfg.Since.IsZero() {
		starts, err = adm.ListStartOffsets(ctx, topics...)
	} else {
		starts, err = adm.ListOffsetsAfterMilli(ctx, k.cfg.Since.Add(-k.cfg.Margin).UnixMilli(), topics...)
	}
	if err != nil {
		return nil, k.explain(err)
	}
	if !k.cfg.Until.IsZero() {
		if untils, err = adm.ListOffsetsAfterMilli(ctx, k.cfg.Until.Add(k.cfg.Margin).UnixMilli(), topics...); err != nil {
			return nil, k.explain(err)
		}
	}
	out := map[string]map[int32]span{}
	var lerr error
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			lerr = k.explain(fmt.Errorf("list the offsets of %s[%d]: %w", o.Topic, o.Partition, o.Err))
			return
		}
		s := span{end: o.Offset}
		if st, ok := starts.Lookup(o.Topic, o.Partition); ok && st.Err == nil && st.Offset >= 0 {
			s.start = st.Offset
		}
		if u, ok := untils.Lookup(o.Topic, o.Partition); ok && u.Err == nil && u.Offset >= 0 && u.Offset < s.end {
			s.end = u.Offset
		}
		if s.start < s.end {
			if out[o.Topic] == nil {
				out[o.Topic] = map[int32]span{}
			}
			out[o.Topic][o.Partition] = s
		}
	})
	return out, lerr
}

// existing are the topics of topics that exist; absent is told the
// others, which are left out of the offsets' requests.
func (k *topicRecords) existing(ctx context.Context, adm *kadm.Client, topics []string, absent func(string)) ([]string, error) {
	details, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return nil, k.explain(fmt.Errorf("describe the topics: %w", err))
	}
	var out []string
	for _, t := range topics {
		d, ok := details[t]
		switch {
		case !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition):
			absent(t)
		case d.Err != nil:
			return nil, k.explain(fmt.Errorf("describe topic %s: %w", t, d.Err))
		default:
			out = append(out, t)
		}
	}
	return out, nil
}

// explain adds to err, a failure to list or read a topic, what the
// principal needs when Kafka refused it.
func (k *topicRecords) explain(err error) error {
	if errors.Is(err, kerr.TopicAuthorizationFailed) || errors.Is(err, kerr.ClusterAuthorizationFailed) {
		return fmt.Errorf("%w: the audit's Kafka principal needs DESCRIBE and READ on the topics it reads (kafka-acls --add --allow-principal User:<name> --operation Read --operation Describe --topic <topic>)", err)
	}
	return err
}

// fetchMaxBytes bounds what one fetch of one broker holds (franz-go's
// default is 50 MiB): an outbox record is small, and each costs a
// kgo.Record of a few hundred bytes while its fetch is held. A million
// rows' audit peaked at 346-349 MiB with the default, 290-305 MiB with
// 1 MiB fetches, no slower (docs/BENCHMARKS.md).
const fetchMaxBytes = 1 << 20

// newTopicRecords returns the reader of cfg's brokers.
func newTopicRecords(cfg Config) *topicRecords {
	opts := append(sink.ReaderOpts(cfg.Kafka), kgo.FetchMaxWait(500*time.Millisecond),
		kgo.FetchMaxBytes(fetchMaxBytes))
	return &topicRecords{cfg: cfg, opts: opts}
}
