package kafkatest

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// EndOffsets returns the high watermark of each partition of topic, from
// any broker cl reaches; a topic that does not exist has none.
func EndOffsets(ctx context.Context, cl *kgo.Client, topic string) (map[int32]int64, error) {
	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	meta.Topics = append(meta.Topics, mt)
	mresp, err := meta.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	out := map[int32]int64{}
	if len(mresp.Topics) == 0 || mresp.Topics[0].ErrorCode != 0 {
		return out, nil
	}
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for _, p := range mresp.Topics[0].Partitions {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = p.Partition
		rp.Timestamp = -1 // the latest offset
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	for _, sh := range cl.RequestSharded(ctx, req) {
		if sh.Err != nil {
			return nil, fmt.Errorf("list offsets of %s: %w", topic, sh.Err)
		}
		for _, t := range sh.Resp.(*kmsg.ListOffsetsResponse).Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return nil, fmt.Errorf("list offsets of %s[%d]: error code %d", topic, p.Partition, p.ErrorCode)
				}
				out[p.Partition] = p.Offset
			}
		}
	}
	return out, nil
}
