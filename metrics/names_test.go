package metrics

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestKnownKafkaErrorNames: each Kafka error name of parkReasons and
// produceErrorNames is one a Kafka error code has, so that its series
// reported from the start is the one a refusal raises.
func TestKnownKafkaErrorNames(t *testing.T) {
	names := map[string]bool{}
	for code := int16(-1); code < 200; code++ {
		if err := kerr.ErrorForCode(code); err != nil {
			if ke, ok := err.(*kerr.Error); ok {
				names[ke.Message] = true
			}
		}
	}
	ours := map[string]bool{"invalid_row": true, "no_timestamp": true, "slow": true, "OTHER": true, "CLIENT_CLOSED": true, "CANCELED": true, "TIMEOUT": true}
	for _, list := range [][]string{parkReasons, produceErrorNames} {
		for _, name := range list {
			if !names[name] && !ours[name] {
				t.Errorf("%s is no Kafka error's name", name)
			}
		}
	}
}
