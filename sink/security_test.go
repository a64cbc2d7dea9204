package sink

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/cdc-relay/cdc-relay/internal/testcert"
)

// certs is a CA, a server certificate for 127.0.0.1 and localhost, and a
// client certificate, all signed by the CA.
type certs struct {
	ca             *testcert.CA
	server, client tls.Certificate
}

func newCerts(t *testing.T) certs {
	t.Helper()
	ca, err := testcert.NewCA("test CA")
	if err != nil {
		t.Fatal(err)
	}
	var c certs
	c.ca = ca
	for _, p := range []struct {
		out  *tls.Certificate
		make func() (testcert.Pair, error)
	}{
		{&c.server, func() (testcert.Pair, error) { return ca.Server("127.0.0.1", "localhost") }},
		{&c.client, func() (testcert.Pair, error) { return ca.Client("relay") }},
	} {
		pair, err := p.make()
		if err != nil {
			t.Fatal(err)
		}
		if *p.out, err = pair.TLS(); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// countingDialer is a dialer that counts its dials, to show that the TLS
// connection runs over the caller's dialer.
type countingDialer struct{ n atomic.Int64 }

func (d *countingDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	d.n.Add(1)
	return (&net.Dialer{}).DialContext(ctx, network, host)
}

// server listens on a loopback port until the test ends, with TLS when cfg
// is not nil, and runs handle on each connection in a goroutine of its
// own, closing the connection when handle returns. It returns the address.
func server(t *testing.T, cfg *tls.Config, handle func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if cfg != nil {
		l = tls.NewListener(l, cfg)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return l.Addr().String()
}

// tlsServer accepts TLS connections with cfg and echoes what they send.
func tlsServer(t *testing.T, cfg *tls.Config) string {
	return server(t, cfg, func(c net.Conn) { _, _ = io.Copy(c, c) })
}

// TestTLSDialer dials a TLS echo server through tlsDialer over a dialer of
// the test's own, and checks which configurations verify.
func TestTLSDialer(t *testing.T) {
	c := newCerts(t)
	plainServer := tlsServer(t, &tls.Config{Certificates: []tls.Certificate{c.server}})
	mtlsServer := tlsServer(t, &tls.Config{Certificates: []tls.Certificate{c.server},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: c.ca.Pool()})
	_, port, _ := net.SplitHostPort(plainServer)
	other, err := testcert.NewCA("another CA")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		addr    string
		cfg     *tls.Config
		wantErr string // "" for success
	}{
		{"the CA verifies the IP address", plainServer, &tls.Config{RootCAs: c.ca.Pool()}, ""},
		{"the server name is the host dialed", "localhost:" + port, &tls.Config{RootCAs: c.ca.Pool()}, ""},
		{"a server name given wins", plainServer, &tls.Config{RootCAs: c.ca.Pool(), ServerName: "localhost"}, ""},
		{"a server name the certificate lacks", plainServer, &tls.Config{RootCAs: c.ca.Pool(), ServerName: "kafka.example"}, "not kafka.example"},
		{"another CA", plainServer, &tls.Config{RootCAs: other.Pool()}, "certificate signed by unknown authority"},
		{"mTLS with the client's certificate", mtlsServer, &tls.Config{RootCAs: c.ca.Pool(), Certificates: []tls.Certificate{c.client}}, ""},
		{"mTLS without one", mtlsServer, &tls.Config{RootCAs: c.ca.Pool()}, "certificate required"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var d countingDialer
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			conn, err := tlsDialer(d.dial, tt.cfg)(ctx, "tcp", tt.addr)
			if err == nil {
				// With TLS 1.3 the server checks the client's certificate
				// after the client's handshake is done: its refusal
				// arrives with the first read.
				defer conn.Close()
				_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
				if _, err = conn.Write([]byte("ping")); err == nil {
					buf := make([]byte, 4)
					_, err = io.ReadFull(conn, buf)
				}
			}
			if d.n.Load() != 1 {
				t.Errorf("the caller's dialer dialed %d times, want 1", d.n.Load())
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("got %v, want a working connection", err)
			case tt.wantErr == "":
				return
			case err == nil:
				t.Fatalf("connected, want an error with %q", tt.wantErr)
			case !strings.Contains(err.Error(), tt.wantErr):
				t.Errorf("error %q, want it to contain %q", err, tt.wantErr)
			}
			if !TLSFailed(err) || !AuthFailed(err) || !ProducerRefused(err) {
				t.Errorf("TLSFailed, AuthFailed and ProducerRefused must report %v", err)
			}
		})
	}
	// The caller's config is cloned, never changed.
	cfg := &tls.Config{RootCAs: c.ca.Pool()}
	conn, err := tlsDialer((&net.Dialer{}).DialContext, cfg)(context.Background(), "tcp", "localhost:"+port)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if cfg.ServerName != "" {
		t.Errorf("the dialer set ServerName %q on the caller's config", cfg.ServerName)
	}
}

// TestTLSHandshakeEndsWithTheContext: a server that accepts the TCP
// connection and never answers the handshake does not hold the dial.
func TestTLSHandshakeEndsWithTheContext(t *testing.T) {
	silent := server(t, nil, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) }) // reads, never answers
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	began := time.Now()
	_, err := tlsDialer((&net.Dialer{}).DialContext, &tls.Config{})(ctx, "tcp", silent)
	if err == nil {
		t.Fatal("the handshake with a silent server succeeded")
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("the dial took %s after its context's 300ms", took)
	}
}

// TestPlaintextToTLS: a client without TLS at a TLS listener reads the
// listener's alert as the size of a Kafka response; franz-go's error for
// it has no type, and TLSFailed must still know it.
func TestPlaintextToTLS(t *testing.T) {
	addr := server(t, nil, func(c net.Conn) {
		_, _ = c.Read(make([]byte, 512))
		// A fatal alert (level 2), unexpected_message (10), in a TLS 1.2
		// record, as Java's SSLEngine answers plaintext.
		_, _ = c.Write([]byte{21, 3, 3, 0, 2, 2, 10})
	})
	s, err := New(Config{Brokers: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Ping(ctx); !TLSFailed(err) || !AuthFailed(err) {
		t.Errorf("Ping: %v, want an error TLSFailed reports", err)
	}
}

func TestAuthFailed(t *testing.T) {
	for _, tt := range []struct {
		err             error
		tls, sasl, auth bool
	}{
		{nil, false, false, false},
		{kerr.SaslAuthenticationFailed, false, true, true},
		{fmt.Errorf("produce: %w: Authentication failed", kerr.SaslAuthenticationFailed), false, true, true},
		{kerr.UnsupportedSaslMechanism, false, true, true},
		{fmt.Errorf("%w (SCRAM-SHA-512, broker 127.0.0.1:9092: EOF)", ErrSASLClosed), false, true, true},
		{fmt.Errorf("unable to dial: %w", &tls.CertificateVerificationError{Err: errors.New("x509: certificate signed by unknown authority")}), true, false, true},
		{&net.OpError{Op: "remote error", Err: errors.New("tls: certificate required")}, true, false, true},
		{tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}, true, false, true},
		{&kgo.ErrFirstReadEOF{}, false, false, false}, // also a load balancer with no broker behind it
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, false, false, false},
		{io.EOF, false, false, false},
		{kerr.ClusterAuthorizationFailed, false, false, false},
		{context.DeadlineExceeded, false, false, false},
	} {
		if got := TLSFailed(tt.err); got != tt.tls {
			t.Errorf("TLSFailed(%v) = %v, want %v", tt.err, got, tt.tls)
		}
		if got := SASLFailed(tt.err); got != tt.sasl {
			t.Errorf("SASLFailed(%v) = %v, want %v", tt.err, got, tt.sasl)
		}
		if got := AuthFailed(tt.err); got != tt.auth {
			t.Errorf("AuthFailed(%v) = %v, want %v", tt.err, got, tt.auth)
		}
	}
}

// TestSinkOverTLS: the producer, its one-record client and Ping reach a
// kfake broker that speaks TLS only, over the caller's dialer; without the
// CA, Ping fails with an error TLSFailed reports.
func TestSinkOverTLS(t *testing.T) {
	c := newCerts(t)
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(),
		kfake.TLS(&tls.Config{Certificates: []tls.Certificate{c.server}}))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	var d countingDialer
	s, err := New(Config{Brokers: kc.ListenAddrs(), AutoCreateTopics: true, Dial: d.dial, TLS: &tls.Config{RootCAs: c.ca.Pool()}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if errs := s.ProduceWait(ctx, []*kgo.Record{{Topic: "t", Value: []byte("v")}}); errs[0] != nil {
		t.Fatalf("produce: %v", errs[0])
	}
	if err := s.ProduceAlone(ctx, &kgo.Record{Topic: "t", Value: []byte("alone")}); err != nil {
		t.Fatalf("produce alone: %v", err)
	}
	if d.n.Load() == 0 {
		t.Errorf("the caller's dialer was not used")
	}

	// The system's roots do not hold the test's CA.
	bad, err := New(Config{Brokers: kc.ListenAddrs(), TLS: &tls.Config{}})
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	err = bad.Ping(ctx)
	if !TLSFailed(err) || !strings.Contains(err.Error(), "unknown authority") {
		t.Errorf("Ping without the CA: %v, want a certificate verification error", err)
	}
}

// TestSinkSASL: Ping against a kfake broker that requires SCRAM-SHA-512
// succeeds with the right credentials and fails with ErrSASLClosed (kfake
// closes the connection on a refusal) with wrong ones.
func TestSinkSASL(t *testing.T) {
	const user, pass = "relay", "the-right-password"
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-512", user, pass))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	for _, tt := range []struct {
		name string
		mech sasl.Mechanism
		ok   bool
	}{
		{"right", scram.Auth{User: user, Pass: pass}.AsSha512Mechanism(), true},
		{"wrong password", scram.Auth{User: user, Pass: "wrong"}.AsSha512Mechanism(), false},
		{"unknown user", scram.Auth{User: "nobody", Pass: pass}.AsSha512Mechanism(), false},
		{"another SCRAM", scram.Auth{User: user, Pass: pass}.AsSha256Mechanism(), false},
		{"PLAIN", plain.Auth{User: user, Pass: pass}.AsMechanism(), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(Config{Brokers: kc.ListenAddrs(), AutoCreateTopics: true, SASL: tt.mech})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err = s.Ping(ctx)
			t.Logf("Ping: %v", err)
			switch {
			case tt.ok && err != nil:
				t.Fatalf("Ping: %v", err)
			case tt.ok:
				if errs := s.ProduceWait(ctx, []*kgo.Record{{Topic: "t", Value: []byte("v")}}); errs[0] != nil {
					t.Fatalf("produce: %v", errs[0])
				}
			case !SASLFailed(err) || !AuthFailed(err):
				t.Fatalf("Ping: %v, want a SASL failure", err)
			case strings.Contains(err.Error(), pass) || strings.Contains(err.Error(), "wrong"):
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
}
