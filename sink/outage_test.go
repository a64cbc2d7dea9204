package sink

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"strings"
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
	outages := newOutages(log, []string{addr}, 200*time.Millisecond)
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
