package kafkatest

import (
	"context"
	"crypto/tls"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/cdc-relay/cdc-relay/internal/testcert"
)

// TestTLSListeners starts a broker with a TLS listener and one that
// requires a client certificate, and pings each with and without what it
// needs. It starts a JVM, so it runs only with CDC_RELAY_TEST_KAFKA=apache.
func TestTLSListeners(t *testing.T) {
	if os.Getenv("CDC_RELAY_TEST_KAFKA") != "apache" {
		t.Skip("starts Apache Kafka: set CDC_RELAY_TEST_KAFKA=apache")
	}
	ca, err := testcert.NewCA("kafkatest CA")
	if err != nil {
		t.Fatal(err)
	}
	server, err := ca.Server("127.0.0.1", "localhost")
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.Client("relay")
	if err != nil {
		t.Fatal(err)
	}
	clientCert, err := client.TLS()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b, err := Start(ctx, Options{TLS: &TLSListener{CertPEM: server.CertPEM, KeyPEM: server.KeyPEM, ClientCAPEM: ca.CertPEM, SCRAM: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	admin, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if err := SetSCRAMUser(ctx, admin, "SCRAM-SHA-512", "relay", "secret"); err != nil {
		t.Fatal(err)
	}
	// The credentials reach the SASL listener through the metadata log.
	for deadline := time.Now().Add(30 * time.Second); ; {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.SASLAddr()), kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool()}),
			kgo.SASL(scram.Auth{User: "relay", Pass: "secret"}.AsSha512Mechanism()))
		if err != nil {
			t.Fatal(err)
		}
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = cl.Ping(pctx)
		cancel()
		cl.Close()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("SCRAM over TLS: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, tt := range []struct {
		name string
		addr string
		tls  *tls.Config
		ok   bool
	}{
		{"TLS", b.TLSAddr(), &tls.Config{RootCAs: ca.Pool()}, true},
		{"TLS without the CA", b.TLSAddr(), &tls.Config{}, false},
		{"plaintext to TLS", b.TLSAddr(), nil, false},
		{"mTLS", b.MTLSAddr(), &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{clientCert}}, true},
		{"mTLS without a client certificate", b.MTLSAddr(), &tls.Config{RootCAs: ca.Pool()}, false},
		{"plaintext", b.Addr(), nil, true},
		{"SCRAM over TLS, wrong password", b.SASLAddr(), &tls.Config{RootCAs: ca.Pool()}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := []kgo.Opt{kgo.SeedBrokers(tt.addr)}
			if tt.tls != nil {
				opts = append(opts, kgo.DialTLSConfig(tt.tls))
			}
			if tt.addr == b.SASLAddr() {
				opts = append(opts, kgo.SASL(scram.Auth{User: "relay", Pass: "wrong"}.AsSha512Mechanism()))
			}
			cl, err := kgo.NewClient(opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err = cl.Ping(ctx)
			t.Logf("ping %s: %v", tt.addr, err)
			if (err == nil) != tt.ok {
				t.Errorf("ping: %v, want success %v", err, tt.ok)
			}
		})
	}
}
