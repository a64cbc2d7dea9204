package sink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cdc-relay/cdc-relay/internal/syncbuf"
)

// TestOutagesLogOnceForAllClients: two producers sharing one Outages,
// their broker stopped and started again, log one line that Kafka cannot
// be reached and one that it is back, and the client's own lines only at
// debug level.
func TestOutagesLogOnceForAllClients(t *testing.T) {
	broker := startKfake(t, 0)
	addr := broker.ListenAddrs()[0]
	_, p, _ := strings.Cut(addr, ":")
	port, _ := strconv.Atoi(p)
	var buf syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	outages := newOutages(log, []string{addr}, 200*time.Millisecond, nil)
	var sinks []*Sink
	for range 2 {
		s, err := New(Config{Brokers: []string{addr}, Logger: log, Outages: outages, AutoCreateTopics: true})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		sinks = append(sinks, s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pingAll := func() {
		for _, s := range sinks {
			pctx, pcancel := context.WithTimeout(ctx, 300*time.Millisecond)
			_ = s.Ping(pctx)
			pcancel()
		}
	}
	pingUntil := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if ctx.Err() != nil {
				t.Fatalf("timed out waiting until %s:\n%s", what, buf.String())
			}
			pingAll()
		}
	}
	if err := sinks[0].ProduceWait(ctx, []*kgo.Record{{Topic: "t", Value: []byte("v")}})[0]; err != nil {
		t.Fatal(err)
	}
	broker.Close()
	pingUntil("Kafka is said to be lost", func() bool { return strings.Contains(buf.String(), "Kafka cannot be reached") })
	for range 3 {
		pingAll() // more failures: they must say nothing more
	}
	startKfake(t, port)
	pingUntil("Kafka is said to be back", func() bool { return strings.Contains(buf.String(), "Kafka is reachable again") })
	pingAll() // more answers: they must say nothing more

	out := buf.String()
	if n := strings.Count(out, "Kafka cannot be reached"); n != 1 {
		t.Errorf("%d lines that Kafka cannot be reached, want 1", n)
	}
	if n := strings.Count(out, "Kafka is reachable again after"); n != 1 {
		t.Errorf("%d lines that Kafka is back, want 1", n)
	}
	for _, want := range []string{"--kafka-brokers", "--kafka-tls", "--kafka-sasl", "brokers=[" + addr + "]", "broker=" + addr} {
		if !strings.Contains(out, want) {
			t.Errorf("the lines do not say %q:\n%s", want, out)
		}
	}
	for _, ln := range strings.Split(out, "\n") {
		if strings.Contains(ln, `msg="kafka: `) && !strings.Contains(ln, "level=DEBUG") {
			t.Errorf("a client line above debug: %s", ln)
		}
	}
	if !strings.Contains(out, `level=DEBUG msg="kafka: `) {
		t.Errorf("no client line at debug level:\n%s", out)
	}
}

// TestClientLinesAtDebugOnly: below debug level the client formats no
// line at all.
func TestClientLinesAtDebugOnly(t *testing.T) {
	for _, tt := range []struct {
		level slog.Level
		want  kgo.LogLevel
	}{{slog.LevelDebug, kgo.LogLevelInfo}, {slog.LevelInfo, kgo.LogLevelNone}, {slog.LevelWarn, kgo.LogLevelNone}} {
		l := slog.New(slog.NewTextHandler(&syncbuf.Buffer{}, &slog.HandlerOptions{Level: tt.level}))
		if got := (kgoLogger{l}).Level(); got != tt.want {
			t.Errorf("at %s: level %s, want %s", tt.level, got, tt.want)
		}
	}
}

// startKfake starts a one-broker kfake cluster on port (0: any), closed
// when the test ends.
func startKfake(t *testing.T, port int) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.Ports(port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestExplainFirstEOF: an EOF in answer to a connection's first request
// names the TLS guess; other failures are left as they are.
func TestExplainFirstEOF(t *testing.T) {
	for _, tt := range []struct {
		key  int16
		err  error
		want string
	}{
		{int16(kmsg.ApiVersions), io.EOF, "EOF: the broker closed a new connection at once, which often means it wants TLS or SASL and the relay does not use it, or the other way round: is TLS misconfigured?"},
		{int16(kmsg.Produce), io.EOF, "EOF"},
		{int16(kmsg.ApiVersions), errors.New("i/o timeout"), "i/o timeout"},
	} {
		if got := explainFirstEOF(tt.key, tt.err).Error(); got != tt.want {
			t.Errorf("explainFirstEOF(%d, %v) = %q, want %q", tt.key, tt.err, got, tt.want)
		}
	}
}

// TestOutagesPerBroker: the lines that failures and answers of brokers
// give, with a grace of 5 s and a fake clock. Broker a (node 0) is also
// the seed "a" (a seed's node id is negative); b is node 1.
func TestOutagesPerBroker(t *testing.T) {
	seedA := kgo.BrokerMetadata{NodeID: -2147483648, Host: "a", Port: 9092}
	a := kgo.BrokerMetadata{NodeID: 0, Host: "a", Port: 9092}
	aliasA := kgo.BrokerMetadata{NodeID: -2147483647, Host: "a.local", Port: 9092}
	b := kgo.BrokerMetadata{NodeID: 1, Host: "b", Port: 9092}
	type ev struct {
		at   float64
		meta kgo.BrokerMetadata
		fail bool
	}
	every := func(from, to, step float64, meta kgo.BrokerMetadata, fail bool) []ev {
		var evs []ev
		for at := from; at <= to; at += step {
			evs = append(evs, ev{at, meta, fail})
		}
		return evs
	}
	join := func(parts ...[]ev) []ev {
		var all []ev
		for _, p := range parts {
			all = append(all, p...)
		}
		sort.SliceStable(all, func(i, j int) bool { return all[i].at < all[j].at })
		return all
	}
	tests := []struct {
		name   string
		events []ev
		want   []string // the lines' messages, up to the first '.' or ';'
	}{
		{"the only broker away 20 s, its seed too: two lines",
			join(every(0, 20, 1, seedA, true), every(0.5, 20.5, 1, a, true), every(21, 25, 1, a, false)),
			[]string{"WARN Kafka cannot be reached", "INFO Kafka is reachable again after 21s"}},
		{"one broker of two away while the other answers: its own two lines, nothing for a",
			join(every(0.5, 30.5, 1, a, false), every(0, 20, 1, b, true), every(21, 30, 1, b, false)),
			[]string{"WARN Kafka broker b:9092 cannot be reached while the other brokers answer node=1", "INFO Kafka broker b:9092 is reachable again after 21s node=1"}},
		{"both away together and back together: the cluster's two lines",
			join(every(0, 20, 1, a, true), every(0.5, 20.5, 1, b, true), every(21, 25, 1, a, false), every(21.2, 25.2, 1, b, false)),
			[]string{"WARN Kafka cannot be reached", "INFO Kafka is reachable again after 21s"}},
		{"both away, a back first, b still away: b's own lines after the cluster's",
			join(every(0, 20, 1, a, true), every(0, 40, 1, b, true), every(21, 50, 1, a, false), every(41, 50, 1, b, false)),
			[]string{"WARN Kafka cannot be reached", "INFO Kafka is reachable again after 21s", "WARN Kafka broker b:9092 cannot be reached while the other brokers answer node=1", "INFO Kafka broker b:9092 is reachable again after 41s node=1"}},
		{"a blip of b within the grace: nothing",
			join(every(0, 10, 1, a, false), every(0.5, 3.5, 1, b, true), every(4, 10, 1, b, false)),
			nil},
		{"an old blip of a seed's other name, then the broker away: the cluster's two lines",
			join([]ev{{0, aliasA, true}, {1, a, false}}, every(100, 120, 1, aliasA, true), every(100.5, 120.5, 1, a, true), every(121, 125, 1, a, false)),
			[]string{"WARN Kafka cannot be reached", "INFO Kafka is reachable again after 21s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Unix(0, 0)
			now := start
			var buf syncbuf.Buffer
			log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: dropTime}))
			h := newOutages(log, []string{"a:9092"}, OutageGrace, func() time.Time { return now }).hooks().(outageHooks)
			for _, e := range tt.events {
				now = start.Add(time.Duration(e.at * float64(time.Second)))
				if e.fail {
					h.OnBrokerConnect(e.meta, 0, nil, errors.New("connection refused"))
				} else {
					h.OnBrokerE2E(e.meta, int16(kmsg.Produce), kgo.BrokerE2E{})
				}
			}
			if got := summarise(buf.String()); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("lines:\n%s\nsummed up %q, want %q", buf.String(), got, tt.want)
			}
		})
	}
}

func dropTime(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

// summarise turns each line into its level, its message up to the first
// '.' or ';' and its node attribute, if any.
func summarise(out string) []string {
	var got []string
	re := regexp.MustCompile(`level=(\w+) msg="([^";]*?)(?:[.;][^"]*)?"`)
	node := regexp.MustCompile(` node=(\d+)`)
	for _, ln := range strings.Split(strings.TrimSpace(out), "\n") {
		m := re.FindStringSubmatch(ln)
		if m == nil {
			continue
		}
		s := m[1] + " " + m[2]
		if n := node.FindStringSubmatch(ln); n != nil {
			s += " node=" + n[1]
		}
		got = append(got, s)
	}
	return got
}

// TestOneBrokerRefused: of two kfake brokers, the relay's connections to
// one are refused while the other answers: within 10 s one line names the
// refused broker, its node id and advertised.listeners; once it is
// allowed again, one line says it is back; nothing names the other.
func TestOneBrokerRefused(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(2), kfake.SeedTopics(4, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	blocked, node, other := leaderOf(t, c, "t", 0)
	var refuse atomic.Bool
	refuse.Store(true)
	var buf syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	d := &net.Dialer{}
	s, err := New(Config{Brokers: []string{other}, Logger: log, Outages: newOutages(log, []string{other}, time.Second, nil),
		Dial: func(ctx context.Context, network, host string) (net.Conn, error) {
			if host == blocked && refuse.Load() {
				return d.DialContext(ctx, network, "127.0.0.1:1") // refused
			}
			return d.DialContext(ctx, network, host)
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var acked atomic.Int32
	for i := range 20 {
		s.Produce(ctx, &kgo.Record{Topic: "t", Key: []byte("k" + strconv.Itoa(i)), Value: []byte("v")}, func(_ *kgo.Record, err error) {
			if err == nil {
				acked.Add(1)
			}
		})
	}
	lost := "Kafka broker " + blocked + " cannot be reached"
	waitPinging(t, s, 10*time.Second, "a line that "+blocked+" cannot be reached", func() bool { return strings.Contains(buf.String(), lost) }, &buf)
	if n := acked.Load(); n == 20 {
		t.Fatalf("all 20 records acked with %s refused: the test proves nothing", blocked)
	}
	refuse.Store(false)
	waitPinging(t, s, 20*time.Second, fmt.Sprintf("every record acked (%d acked) and a line that %s is back", acked.Load(), blocked), func() bool {
		return acked.Load() == 20 && strings.Contains(buf.String(), "Kafka broker "+blocked+" is reachable again after")
	}, &buf)
	out := buf.String()
	if n := strings.Count(out, lost); n != 1 {
		t.Errorf("%d lines that %s cannot be reached, want 1:\n%s", n, blocked, out)
	}
	for _, want := range []string{"node=" + strconv.Itoa(int(node)), "advertised.listeners", "--kafka-brokers", "connection refused"} {
		if !strings.Contains(out, want) {
			t.Errorf("the lines do not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Kafka broker "+other) || strings.Contains(out, "Kafka cannot be reached") {
		t.Errorf("a line about the broker that answers, or the whole cluster:\n%s", out)
	}
}

// leaderOf returns the address and node id of the leader of topic's
// partition, and the address of another broker of c.
func leaderOf(t *testing.T, c *kfake.Cluster, topic string, partition int32) (addr string, node int32, other string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	node = -1
	for _, p := range resp.Topics[0].Partitions {
		if p.Partition == partition {
			node = p.Leader
		}
	}
	for _, b := range resp.Brokers {
		a := net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
		if b.NodeID == node {
			addr = a
		} else {
			other = a
		}
	}
	if addr == "" || other == "" {
		t.Fatalf("no leader of %s[%d] and another broker in %+v", topic, partition, resp.Brokers)
	}
	return addr, node, other
}

// waitPinging pings s, as the relay's health check does, until cond holds
// or within passes, and shows log if it does not.
func waitPinging(t *testing.T, s *Sink, within time.Duration, what string, cond func() bool, log *syncbuf.Buffer) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s; the log:\n%s", within, what, log.String())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		_ = s.Ping(ctx)
		cancel()
	}
}
