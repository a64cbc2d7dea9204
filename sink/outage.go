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
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cdc-relay/cdc-relay/internal/outage"
)

// OutageGrace is how long every attempt to reach Kafka must fail, with no
// answer between, before the relay says Kafka cannot be reached: a broker
// restarting or a connection closed and opened again says nothing. The
// same grace holds for one broker.
const OutageGrace = 5 * time.Second

// brokerForget is how long one broker address's failures are remembered
// with no attempt since: a seed's address, tried rarely, then does not
// count a blip long past as the start of an outage. It is well above the
// client's longest wait between retries, so a broker that is away is
// tried again before its failures are forgotten.
const brokerForget = 30 * time.Second

// Outages says once, at warn, that Kafka cannot be reached (the seed
// brokers, the broker and error of the latest failure, what to check) and
// once, at info, when it is back (how long it was gone, how many records
// waited), for every client given it in [Config.Outages]: the relay's
// producers share one, so an outage is two lines, not two per client.
//
// It does the same for each broker on its own, by address (host:port: a
// seed and the broker it turns out to be are one): a broker that cannot
// be reached while others answer stalls its partitions, and gets its own
// two lines, naming it (and its node id once known) and what to check,
// among them its advertised.listeners. While the whole cluster is away
// its line covers every broker; a broker still away after the cluster is
// back gets its own line at its next failure.
//
// A failure is a connection that could not be opened or a request that
// got no answer; a success is an answer, the cluster's from any broker, a
// broker's from that broker. An idle client sends nothing: an outage is
// noticed when something is produced, at a metadata refresh, or at a
// [Sink.Ping] (the relay pings every few seconds). Create it with
// [NewOutages].
type Outages struct {
	log     *slog.Logger
	brokers []string // the seeds, for the lines
	grace   time.Duration
	now     func() time.Time
	cluster *outage.Tracker // any answer ends its failures

	perBroker sync.Map // hostPort → *brokerOutage; entries are never removed
	// brokerFailing is false only while no broker's failures are under
	// way: an answer then costs this one atomic load.
	brokerFailing atomic.Bool

	mu      sync.Mutex
	clients map[*kgo.Client]struct{} // whose buffered records are counted at Back
}

// hostPort keys a broker by the address the client dials.
type hostPort struct {
	host string
	port int32
}

// brokerOutage is one broker address's outage log.
type brokerOutage struct {
	addr string
	node atomic.Int32 // the broker's node id; -1 until known
	t    *outage.Tracker
}

// NewOutages returns the outage log of brokers (the seed list), logging to
// log.
func NewOutages(log *slog.Logger, brokers []string) *Outages {
	return newOutages(log, brokers, OutageGrace, nil)
}

// newOutages is NewOutages with a grace and a clock (nil: time.Now) of its
// own, for tests.
func newOutages(log *slog.Logger, brokers []string, grace time.Duration, now func() time.Time) *Outages {
	if now == nil {
		now = time.Now
	}
	o := &Outages{log: log, brokers: brokers, grace: grace, now: now, clients: map[*kgo.Client]struct{}{}}
	o.cluster = outage.New(outage.Config{
		Grace: grace,
		Now:   now,
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

// broker returns the outage log of meta's address, made on first use.
func (o *Outages) broker(meta kgo.BrokerMetadata) *brokerOutage {
	key := hostPort{meta.Host, meta.Port}
	if b, ok := o.perBroker.Load(key); ok {
		return b.(*brokerOutage)
	}
	b := &brokerOutage{addr: brokerAddr(meta)}
	b.node.Store(-1)
	b.t = outage.New(outage.Config{
		Grace:  o.grace,
		Forget: brokerForget,
		Now:    o.now,
		// The cluster's line covers its brokers.
		Defer: func(outage.Outage) bool { return o.cluster.Down() },
		Lost:  func(out outage.Outage) { o.brokerLost(b, out) },
		Back:  func(out outage.Outage) { o.brokerBack(b, out) },
	})
	actual, _ := o.perBroker.LoadOrStore(key, b)
	return actual.(*brokerOutage)
}

// brokerLost says that one broker cannot be reached while others answer.
func (o *Outages) brokerLost(b *brokerOutage, out outage.Outage) {
	o.log.Warn("Kafka broker "+b.addr+" cannot be reached while the other brokers answer; the events of its partitions wait and are retried. "+
		"Check what the relay is told to dial: --kafka-brokers, and the broker's advertised.listeners (the address it gives clients must be reachable from the relay); "+
		"then the TLS settings (--kafka-tls*), the SASL settings (--kafka-sasl-*) and the network",
		b.attrs("err", out.Err, "failing_for", out.Lasted.Round(100*time.Millisecond))...)
}

// brokerBack says that a broker lost on its own answers again.
func (o *Outages) brokerBack(b *brokerOutage, out outage.Outage) {
	o.log.Info("Kafka broker "+b.addr+" is reachable again after "+out.Lasted.Round(100*time.Millisecond).String(),
		b.attrs("buffered_records", o.buffered())...)
}

// attrs are the broker's address, its node id when known, then more.
func (b *brokerOutage) attrs(more ...any) []any {
	a := []any{"broker", b.addr}
	if n := b.node.Load(); n >= 0 {
		a = append(a, "node", n)
	}
	return append(a, more...)
}

// noteNode keeps meta's node id; a seed's (negative) says nothing.
func (b *brokerOutage) noteNode(id int32) {
	if id >= 0 && b.node.Load() != id {
		b.node.Store(id)
	}
}

// failed records a failed connection or request to meta's broker.
func (o *Outages) failed(meta kgo.BrokerMetadata, err error) {
	addr := brokerAddr(meta)
	o.cluster.Failed(addr, err) // first: its Lost covers the broker's
	b := o.broker(meta)
	b.noteNode(meta.NodeID)
	b.t.Failed(addr, err)
	o.brokerFailing.Store(true) // after the broker's: see clearBrokerFailing
}

// answered records an answer of meta's broker. While nothing fails it is
// one atomic load: the cluster fails only while some broker does.
func (o *Outages) answered(meta kgo.BrokerMetadata) {
	if !o.brokerFailing.Load() {
		return
	}
	o.cluster.Succeeded()
	v, ok := o.perBroker.Load(hostPort{meta.Host, meta.Port})
	if !ok {
		return
	}
	b := v.(*brokerOutage)
	if !b.t.Failing() {
		return
	}
	b.noteNode(meta.NodeID)
	b.t.Succeeded()
	o.clearBrokerFailing()
}

// clearBrokerFailing leaves brokerFailing false if no broker fails. It
// clears the flag before looking, and failed sets it after the broker's
// tracker: a failure it does not see sets the flag again.
func (o *Outages) clearBrokerFailing() {
	o.brokerFailing.Store(false)
	o.perBroker.Range(func(_, v any) bool {
		if v.(*brokerOutage).t.Failing() {
			o.brokerFailing.Store(true)
			return false
		}
		return true
	})
}

// hooks returns the franz-go hooks that tell o about one client's
// connections and requests.
func (o *Outages) hooks() kgo.Hook { return outageHooks{o} }

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

// outageHooks feeds an Outages from franz-go's hooks. A request's answer
// costs one atomic load while Kafka answers.
type outageHooks struct{ o *Outages }

var (
	_ kgo.HookBrokerConnect = outageHooks{}
	_ kgo.HookBrokerE2E     = outageHooks{}
)

func (h outageHooks) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err != nil && !ours(err) {
		h.o.failed(meta, err)
	}
}

func (h outageHooks) OnBrokerE2E(meta kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	switch err := e2e.Err(); {
	case err == nil:
		h.o.answered(meta)
	case !ours(err):
		h.o.failed(meta, explainFirstEOF(key, err))
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
