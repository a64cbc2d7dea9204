package e2e

import (
	"context"
	"crypto/tls"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/cdc-relay/cdc-relay/internal/kafkatest"
	"github.com/cdc-relay/cdc-relay/internal/testcert"
)

// brokerCA signs the certificate of the Apache Kafka broker's TLS
// listeners, and the client certificates its mTLS listener accepts.
var brokerCA *testcert.CA

// brokerTLS makes brokerCA and the Apache Kafka broker's TLS listeners.
func brokerTLS() (*kafkatest.TLSListener, error) {
	var err error
	if brokerCA, err = testcert.NewCA("cdc-relay e2e CA"); err != nil {
		return nil, err
	}
	server, err := brokerCA.Server("127.0.0.1", "localhost")
	if err != nil {
		return nil, err
	}
	return &kafkatest.TLSListener{CertPEM: server.CertPEM, KeyPEM: server.KeyPEM, ClientCAPEM: brokerCA.CertPEM, SCRAM: true}, nil
}

// securityStep is one relay run against a broker that wants TLS or SASL.
type securityStep struct {
	name    string
	addr    string            // the broker
	client  []kgo.Opt         // how the test's own client reaches it
	args    []string          // the relay's security flags
	env     map[string]string // the relay's environment, besides the test's
	refused []string          // nil: events flow; else the relay exits 1 at start, saying each
	// waits, if set: the relay cannot tell a misconfiguration from a
	// broker that is away (the connection is closed at once, as a load
	// balancer with no broker behind it does), so it runs on, not ready,
	// and warns saying each.
	waits []string
	logs  []string // what the log of a relay that works must say
}

// plaintextToTLS completes s, a relay without TLS against a TLS listener.
// Apache Kafka answers with a TLS alert, which says what is wrong: the
// relay exits naming --kafka-tls. kfake closes the connection without a
// word, as a load balancer with no broker behind it does: the relay waits,
// not ready, and warns with franz-go's guess.
func plaintextToTLS(s securityStep) securityStep {
	if brokerKind() == "apache" {
		s.refused = []string{"add --kafka-tls"}
	} else {
		s.waits = []string{"Kafka does not answer yet", "is TLS misconfigured"}
	}
	return s
}

// runSecuritySteps runs the relay once per step, each against the test's
// database and slot: a step that works must deliver an event inserted
// while it runs; one that does not must exit 1 at start with a clear
// error. Neither the log nor the command line may hold any of secrets.
func (e *env) runSecuritySteps(steps []securityStep, secrets ...string) {
	e.t.Helper()
	for _, s := range steps {
		e.t.Logf("step: %s", s.name)
		e.brokers, e.kafkaOpts = []string{s.addr}, s.client
		e.relayEnv = map[string]string{"CDC_RELAY_KAFKA_SASL_PASSWORD": "", "CDC_RELAY_KAFKA_SASL_PASSWORD_FILE": ""}
		for k, v := range s.env {
			e.setRelayEnv(k, v)
		}
		args := e.relayArgs(s.args...)
		var log, cmdline string
		switch {
		case s.waits != nil:
			p := e.spawnRelayArgs(relayBin, args...)
			cmdline = strings.Join(args, "\x00")
			e.waitFor(s.name+": the relay warns that Kafka does not answer", 30*time.Second, func() bool {
				for _, want := range s.waits {
					if !strings.Contains(p.Log(), want) {
						return false
					}
				}
				return true
			})
			if code, body := p.call("GET", "/readyz", ""); code != 503 || !strings.Contains(body, "Kafka") {
				e.t.Errorf("%s: GET /readyz: %d %q, want 503 naming Kafka", s.name, code, body)
			}
			p.Kill()
			log = p.Log()
		case s.refused == nil:
			p := e.startRelayArgs(relayBin, args...)
			b, err := os.ReadFile("/proc/" + strconv.Itoa(p.Pid()) + "/cmdline")
			if err != nil {
				e.t.Fatal(err)
			}
			cmdline = string(b)
			insert(e.t, e.conn, "order", s.name, "OrderPlaced", `{}`)
			e.readKey(e.topic("order"), s.name, 60*time.Second)
			p.stop(30 * time.Second)
			log = p.Log()
			for _, want := range s.logs {
				if !strings.Contains(log, want) {
					e.t.Errorf("%s: the relay's log lacks %q:\n%s", s.name, want, log)
				}
			}
		default:
			p := e.spawnRelayArgs(relayBin, args...)
			cmdline = strings.Join(args, "\x00")
			select {
			case <-p.Done():
			case <-time.After(60 * time.Second):
				e.t.Fatalf("%s: the relay still runs after 60s; want it to exit with an error\n%s", s.name, p.Log())
			}
			log = p.Log()
			e.t.Logf("%s: %s", s.name, strings.TrimSpace(log[strings.LastIndex(strings.TrimSpace(log), "\n")+1:]))
			var exit *exec.ExitError
			if !errors.As(p.Err(), &exit) || exit.ExitCode() != 1 {
				e.t.Errorf("%s: the relay exited with %v, want exit status 1\n%s", s.name, p.Err(), log)
			}
			for _, want := range s.refused {
				if !strings.Contains(log, want) {
					e.t.Errorf("%s: the relay's log lacks %q:\n%s", s.name, want, log)
				}
			}
			if strings.Contains(log, "replication started") {
				e.t.Errorf("%s: the relay streamed before it exited:\n%s", s.name, log)
			}
		}
		for _, secret := range secrets {
			if strings.Contains(log, secret) {
				e.t.Errorf("%s: the relay logged a password:\n%s", s.name, log)
			}
			if strings.Contains(cmdline, secret) {
				e.t.Errorf("%s: a password is on the relay's command line", s.name)
			}
		}
	}
}

// readKey reads topic from the start until a record with key arrives; it
// fails the test after timeout.
func (e *env) readKey(topic, key string, timeout time.Duration) {
	e.t.Helper()
	cl := e.fromStart(topic)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		f := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			e.t.Fatalf("read %s: no record with key %q within %s", topic, key, timeout)
		}
		if slices.ContainsFunc(f.Records(), func(r *kgo.Record) bool { return string(r.Key) == key }) {
			return
		}
	}
}

// newKfakeCert returns a new CA and a server certificate it signed for
// 127.0.0.1 and localhost, for kfake brokers of the test's own that speak
// TLS.
func newKfakeCert(t *testing.T) (*testcert.CA, tls.Certificate) {
	t.Helper()
	ca, err := testcert.NewCA("cdc-relay e2e CA")
	if err != nil {
		t.Fatal(err)
	}
	pair, err := ca.Server("127.0.0.1", "localhost")
	if err != nil {
		t.Fatal(err)
	}
	server, err := pair.TLS()
	if err != nil {
		t.Fatal(err)
	}
	return ca, server
}

// startKfake starts a kfake broker of the test's own with opts and returns
// its address.
func startKfake(t *testing.T, opts ...kfake.Opt) string {
	t.Helper()
	kc, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(4)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	return kc.ListenAddrs()[0]
}

// TestKafkaTLS: the relay reaches a broker over TLS, verifying its
// certificate with --kafka-tls-ca-file, and one that requires a client
// certificate (mTLS). Without the CA, with a name the certificate lacks,
// without TLS, without the client certificate, or (Apache Kafka) with TLS
// to a plaintext listener, it exits at start with
// an error that names the flag to fix. Apache Kafka serves TLS on
// listeners of the shared broker (CDC_RELAY_TEST_KAFKA=apache); with kfake
// the test starts two brokers that speak TLS.
func TestKafkaTLS(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	plainAddr := e.brokers[0]
	ca := brokerCA
	var tlsAddr, mtlsAddr string
	switch brokerKind() {
	case "apache":
		tlsAddr, mtlsAddr = apache.TLSAddr(), apache.MTLSAddr()
	case "kfake":
		var server tls.Certificate
		ca, server = newKfakeCert(t)
		tlsAddr = startKfake(t, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{server}}))
		mtlsAddr = startKfake(t, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{server},
			ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool()}))
	default:
		t.Skip("an external broker (CDC_RELAY_TEST_KAFKA_BROKERS) has no TLS listener the test knows")
	}
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, ca.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	client, err := ca.Client("relay")
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, err := client.WriteFiles(dir, "relay")
	if err != nil {
		t.Fatal(err)
	}
	clientCert, err := client.TLS()
	if err != nil {
		t.Fatal(err)
	}
	tlsClient := []kgo.Opt{kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool()})}
	mtlsClient := []kgo.Opt{kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{clientCert}})}
	steps := []securityStep{
		{name: "the CA file verifies the broker", addr: tlsAddr, client: tlsClient,
			args: []string{"--kafka-tls-ca-file", caFile}},
		{name: "the system's roots do not", addr: tlsAddr, client: tlsClient, args: []string{"--kafka-tls"},
			refused: []string{"Kafka refuses the relay's connection", "certificate signed by unknown authority", "name its CA in --kafka-tls-ca-file"}},
		{name: "a name the certificate lacks", addr: tlsAddr, client: tlsClient,
			args:    []string{"--kafka-tls-ca-file", caFile, "--kafka-tls-server-name", "kafka.example"},
			refused: []string{"not kafka.example", "--kafka-tls-server-name"}},
		plaintextToTLS(securityStep{name: "no TLS", addr: tlsAddr, client: tlsClient}),
		{name: "mTLS", addr: mtlsAddr, client: mtlsClient,
			args: []string{"--kafka-tls-ca-file", caFile, "--kafka-tls-cert-file", certFile, "--kafka-tls-key-file", keyFile}},
		{name: "mTLS without a client certificate", addr: mtlsAddr, client: mtlsClient, args: []string{"--kafka-tls-ca-file", caFile},
			refused: []string{"pass --kafka-tls-cert-file and --kafka-tls-key-file"}},
	}
	// Apache Kafka closes a connection that opens with a TLS handshake on
	// a plaintext listener without a word, as a load balancer with no
	// broker behind it does: the relay waits, not ready, and warns with
	// franz-go's guess. kfake waits for the rest of what it takes for a
	// 369 MB request, so there the relay can only time out, as behind a
	// hung proxy.
	if brokerKind() == "apache" {
		steps = append(steps, securityStep{name: "TLS to a plaintext listener", addr: plainAddr,
			args: []string{"--kafka-tls-ca-file", caFile}, waits: []string{"Kafka does not answer yet", "is TLS misconfigured"}})
	}
	e.runSecuritySteps(steps)
}

// TestKafkaSASL: the relay authenticates with SCRAM-SHA-512 to a kfake
// broker that requires it, its password from the environment or from a
// file; with a wrong password it exits at start with an error that names
// the user and where the password came from. The password is never in its
// log or on its command line. kfake, whatever broker the suite uses: the
// Apache Kafka broker has no SASL listener.
func TestKafkaSASL(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	const user, password, wrong = "relay", "scram-Pa55-of-the-test", "not-the-Pa55word"
	addr := startKfake(t, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", user, password), kfake.Superuser("PLAIN", user, password))
	dir := t.TempDir()
	rightFile, wrongFile := filepath.Join(dir, "right"), filepath.Join(dir, "wrong")
	for f, pw := range map[string]string{rightFile: password + "\n", wrongFile: wrong + "\n"} {
		if err := os.WriteFile(f, []byte(pw), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	client := []kgo.Opt{kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha512Mechanism())}
	scram512 := []string{"--kafka-sasl-mechanism", "SCRAM-SHA-512", "--kafka-sasl-user", user}
	e.runSecuritySteps([]securityStep{
		{name: "password from the environment", addr: addr, client: client, args: scram512,
			env: map[string]string{"CDC_RELAY_KAFKA_SASL_PASSWORD": password}, logs: []string{"sasl=SCRAM-SHA-512 user=relay"}},
		{name: "password from a file", addr: addr, client: client, args: slices.Concat(scram512, []string{"--kafka-sasl-password-file", rightFile})},
		{name: "wrong password from the environment", addr: addr, client: client, args: scram512,
			env: map[string]string{"CDC_RELAY_KAFKA_SASL_PASSWORD": wrong},
			refused: []string{"Kafka refuses the relay's connection", "SASL authentication",
				`check --kafka-sasl-user "relay" and its password (from CDC_RELAY_KAFKA_SASL_PASSWORD)`}},
		{name: "wrong password from a file", addr: addr, client: client, args: scram512,
			env:     map[string]string{"CDC_RELAY_KAFKA_SASL_PASSWORD_FILE": wrongFile},
			refused: []string{`check --kafka-sasl-user "relay" and its password (from --kafka-sasl-password-file ` + wrongFile + ")"}},
		{name: "another mechanism", addr: addr, client: client, args: []string{"--kafka-sasl-mechanism", "SCRAM-SHA-256", "--kafka-sasl-user", user},
			env: map[string]string{"CDC_RELAY_KAFKA_SASL_PASSWORD": password}, refused: []string{"enables SCRAM-SHA-256"}},
		{name: "PLAIN without TLS works, with a warning", addr: addr, client: client, args: []string{"--kafka-sasl-mechanism", "plain", "--kafka-sasl-user", user},
			env: map[string]string{"CDC_RELAY_KAFKA_SASL_PASSWORD": password}, logs: []string{"level=WARN msg=\"SASL PLAIN without TLS"}},
	}, password, wrong)
}

// TestKafkaSCRAMOverTLS: SCRAM-SHA-512 over TLS, as most managed Kafka
// clusters want it, against the shared Apache Kafka broker's SASL_SSL
// listener, which answers a wrong password with SASL_AUTHENTICATION_FAILED
// (CDC_RELAY_TEST_KAFKA=apache), or a kfake broker of the test's own that
// requires both.
func TestKafkaSCRAMOverTLS(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	const user, password, wrong = "relay-tls", "scram-over-TLS-Pa55", "not-the-Pa55word"
	ca := brokerCA
	var addr string
	switch brokerKind() {
	case "apache":
		addr = apache.SASLAddr()
		admin := e.client()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := kafkatest.SetSCRAMUser(ctx, admin, "SCRAM-SHA-512", user, password); err != nil {
			t.Fatal(err)
		}
		// The credentials reach the listener through the metadata log.
		e.waitFor("the broker accepts the new SCRAM user", 30*time.Second, func() bool {
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool()}),
				kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha512Mechanism()))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return cl.Ping(ctx) == nil
		})
	case "kfake":
		var server tls.Certificate
		ca, server = newKfakeCert(t)
		addr = startKfake(t, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{server}}),
			kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", user, password))
	default:
		t.Skip("an external broker (CDC_RELAY_TEST_KAFKA_BROKERS) has no SASL listener the test knows")
	}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, ca.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	client := []kgo.Opt{kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool()}), kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha512Mechanism())}
	args := []string{"--kafka-tls-ca-file", caFile, "--kafka-sasl-mechanism", "SCRAM-SHA-512", "--kafka-sasl-user", user}
	e.runSecuritySteps([]securityStep{
		{name: "SCRAM over TLS", addr: addr, client: client, args: args,
			env: map[string]string{"CDC_RELAY_KAFKA_SASL_PASSWORD": password}, logs: []string{"tls=true", "sasl=SCRAM-SHA-512 user=relay-tls"}},
		{name: "wrong password", addr: addr, client: client, args: args, env: map[string]string{"CDC_RELAY_KAFKA_SASL_PASSWORD": wrong},
			refused: []string{"Kafka refuses the relay's connection", `check --kafka-sasl-user "relay-tls" and its password (from CDC_RELAY_KAFKA_SASL_PASSWORD)`}},
		plaintextToTLS(securityStep{name: "SCRAM without TLS", addr: addr, client: client, args: args[2:],
			env: map[string]string{"CDC_RELAY_KAFKA_SASL_PASSWORD": password}}),
	}, password, wrong)

	// The poller delivers parked events with a Kafka client of its own:
	// it connects with TLS and SCRAM too.
	e.brokers, e.kafkaOpts = []string{addr}, client
	e.setRelayEnv("CDC_RELAY_KAFKA_SASL_PASSWORD", password)
	relay := e.startRelay(append(args, "--kafka-create-topics=false", "--retry-base", "200ms", "--retry-max", "1s")...)
	insert(t, e.conn, "parked", "k", "Parked", `{}`)
	e.waitFor("the event is parked for its missing topic", 60*time.Second, func() bool { return e.statusCount("FAILED") == 1 })
	e.createTopic(e.topic("parked"), nil)
	e.waitFor("the poller delivers it", 60*time.Second, func() bool { return e.statusCount("DELIVERED") == 1 })
	e.readN(e.topic("parked"), 1, 30*time.Second)
	relay.stop(30 * time.Second)
	if strings.Contains(relay.Log(), password) {
		t.Errorf("the relay logged the password")
	}
}
