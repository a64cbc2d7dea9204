package sink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cdc-relay/cdc-relay/internal/outage"
)

// OutageGrace is how long every attempt to reach Kafka must fail, with no
// answer between, before the relay says Kafka cannot be reached: a broker
// restarting or a connection closed and opened again says nothing.
const OutageGrace = 5 * time.Second

// Outages says once, at warn, that Kafka cannot be reached (the seed
// brokers, the broker and error of the latest failure, what to check) and
// once, at info, when it is back (how long it was gone, how many records
// waited), for every client given it in [Config.Outages]: the relay's
// producers share one, so an outage is two lines, not two per client.
//
// A failure is a connection that could not be opened or a request that
// got no answer; a success is any answer. An idle client sends nothing:
// an outage is noticed when something is produced, at a metadata refresh,
// or at a [Sink.Ping] (the relay pings every few seconds). Create it with
// [NewOutages].
type Outages struct {
	tracker *outage.Tracker

	mu      sync.Mutex
	clients map[*kgo.Client]struct{} // whose buffered records are counted at Back
}

// NewOutages returns the outage log of brokers (the seed list), logging to
// log.
func NewOutages(log *slog.Logger, brokers []string) *Outages {
	return newOutages(log, brokers, OutageGrace)
}

// newOutages is NewOutages with a grace of its own, for tests.
func newOutages(log *slog.Logger, brokers []string, grace time.Duration) *Outages {
	o := &Outages{clients: map[*kgo.Client]struct{}{}}
	o.tracker = outage.New(outage.Config{
		Grace: grace,
		Lost: func(out outage.Outage) {
			log.Warn("Kafka cannot be reached; events wait and are retried. Check --kafka-brokers, the TLS settings (--kafka-tls*), the SASL settings (--kafka-sasl-*) and the network",
				"brokers", brokers, "broker", out.Where, "err", out.Err, "failing_for", out.Lasted.Round(100*time.Millisecond))
		},
		Back: func(out outage.Outage) {
			log.Info("Kafka is reachable again after "+out.Lasted.Round(100*time.Millisecond).String(),
				"brokers", brokers, "buffered_records", o.buffered())
		},
	})
	return o
}

// hooks returns the franz-go hooks that tell o about one client's
// connections and requests.
func (o *Outages) hooks() kgo.Hook { return outageHooks{o.tracker} }

// add counts cl's buffered records at Back until remove.
func (o *Outages) add(cl *kgo.Client) {
	o.mu.Lock()
	o.clients[cl] = struct{}{}
	o.mu.Unlock()
}

func (o *Outages) remove(cl *kgo.Client) {
	o.mu.Lock()
	delete(o.clients, cl)
	o.mu.Unlock()
}

// buffered is how many records the clients hold, not yet acked.
func (o *Outages) buffered() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	var n int64
	for cl := range o.clients {
		n += cl.BufferedProduceRecords()
	}
	return n
}

// outageHooks feeds a tracker from franz-go's hooks. A request's answer
// costs one atomic load while Kafka answers.
type outageHooks struct{ t *outage.Tracker }

var (
	_ kgo.HookBrokerConnect = outageHooks{}
	_ kgo.HookBrokerE2E     = outageHooks{}
)

func (h outageHooks) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err != nil && !ours(err) {
		h.t.Failed(brokerAddr(meta), err)
	}
}

func (h outageHooks) OnBrokerE2E(meta kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	switch err := e2e.Err(); {
	case err == nil:
		h.t.Succeeded()
	case !ours(err):
		h.t.Failed(brokerAddr(meta), explainFirstEOF(key, err))
	}
}

// explainFirstEOF adds franz-go's guess (which its own log line, now at
// debug, made) to an EOF in answer to a connection's first request, the
// API versions: a broker that closes a new connection at once usually
// wants TLS, or SASL, that the client does not use.
func explainFirstEOF(key int16, err error) error {
	if key != int16(kmsg.ApiVersions) || !errors.Is(err, io.EOF) || errors.As(err, new(*kgo.ErrFirstReadEOF)) {
		return err
	}
	return fmt.Errorf("%w: the broker closed a new connection at once, which often means it wants TLS or SASL and the relay does not use it, or the other way round: is TLS misconfigured?", err)
}

// ours reports whether err is the client's own end (closed, or a context
// the relay ended), not the broker's.
func ours(err error) bool {
	return errors.Is(err, kgo.ErrClientClosed) || errors.Is(err, context.Canceled)
}

func brokerAddr(meta kgo.BrokerMetadata) string {
	return net.JoinHostPort(meta.Host, strconv.Itoa(int(meta.Port)))
}
