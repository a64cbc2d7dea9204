package kafkatest

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// EndOffsets returns the high watermark of each partition of topic, from
// any broker cl reaches; a topic that does not exist has none.
func EndOffsets(ctx context.Context, cl *kgo.Client, topic string) (map[int32]int64, error) {
	listed, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("list end offsets of %s: %w", topic, err)
	}
	out := map[int32]int64{}
	for p, o := range listed[topic] {
		switch {
		case errors.Is(o.Err, kerr.UnknownTopicOrPartition) && p < 0:
			return map[int32]int64{}, nil // the whole topic is unknown
		case o.Err != nil:
			return nil, fmt.Errorf("list end offsets of %s[%d]: %w", topic, p, o.Err)
		}
		out[p] = o.Offset
	}
	return out, nil
}

// CreateTopic creates topic with partitions partitions, replication factor
// 1, and the topic configs given (nil for the broker's defaults). The error
// wraps the broker's (kerr.TopicAlreadyExists when it exists).
func CreateTopic(ctx context.Context, cl *kgo.Client, topic string, partitions int32, configs map[string]string) error {
	cfg := make(map[string]*string, len(configs))
	for k, v := range configs {
		cfg[k] = kadm.StringPtr(v)
	}
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, cfg, topic); err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return nil
}

// SetSCRAMUser sets the SCRAM credentials of user for mechanism
// (SCRAM-SHA-256 or SCRAM-SHA-512), through cl. The broker may take a
// moment to accept them.
func SetSCRAMUser(ctx context.Context, cl *kgo.Client, mechanism, user, password string) error {
	var m kadm.ScramMechanism
	switch mechanism {
	case "SCRAM-SHA-256":
		m = kadm.ScramSha256
	case "SCRAM-SHA-512":
		m = kadm.ScramSha512
	default:
		return fmt.Errorf("SCRAM mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", mechanism)
	}
	res, err := kadm.NewClient(cl).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: user, Mechanism: m, Iterations: 4096, Password: password}})
	if err == nil {
		err = res[user].Err
	}
	if err != nil {
		return fmt.Errorf("set the %s credentials of %s: %w", mechanism, user, err)
	}
	return nil
}
