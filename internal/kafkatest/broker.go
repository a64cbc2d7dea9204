// Package kafkatest runs a real Apache Kafka broker for the e2e suite: one
// combined broker+controller KRaft node from the jars that Maven fetches
// (pom.xml beside this file) into a git-ignored cache, on free loopback
// ports, with a small heap, its data in a temporary directory. make kafka
// (scripts/kafka) runs the same broker on a fixed port for a person to try
// the relay against, and Kafka's topic tool and console consumer from the
// same jars.
//
// The first Start runs Maven (minutes on a cold cache); later ones reuse the
// jars and take seconds. Java 17+ and Maven must be installed.
package kafkatest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/internal/freeport"
)

// Version is the Kafka version pom.xml names.
const Version = "4.4.0"

// Options configures a broker.
type Options struct {
	// Config are extra server.properties settings, overriding the defaults.
	Config map[string]string
	// Heap is the JVM heap, default "512m".
	Heap string
	// TLS, if set, adds a listener that speaks TLS (Kafka's SSL), at
	// [Broker.TLSAddr].
	TLS *TLSListener
	// Port, if not 0, is the port of the plaintext listener ([Broker.Addr])
	// rather than a free one; Start fails at once when it is taken.
	Port int
	// Dir, if set, holds the broker's configuration, log and data rather
	// than a temporary directory: it is created if missing, its storage
	// is formatted only the first time, and Close keeps it.
	Dir string
	// Output, if set, receives the broker's own output (its log at level
	// warn) as well as its log file.
	Output io.Writer
}

// TLSListener is the certificate of the broker's TLS listeners.
type TLSListener struct {
	// CertPEM is the broker's certificate chain, and KeyPEM its private
	// key, unencrypted PKCS #8 ("PRIVATE KEY"), as Kafka's PEM key store
	// takes them.
	CertPEM, KeyPEM []byte
	// ClientCAPEM, if set, adds a second TLS listener, at
	// [Broker.MTLSAddr], that requires a client certificate signed by one
	// of these CA certificates.
	ClientCAPEM []byte
	// SCRAM adds a SASL_SSL listener, at [Broker.SASLAddr], that
	// authenticates with SCRAM-SHA-256 or SCRAM-SHA-512; [SetSCRAMUser]
	// adds users.
	SCRAM bool
}

// Broker is a running broker. Stop and Start restart it on the same ports
// with its data; Close stops it and removes the data.
type Broker struct {
	dir, libs      string
	port, ctrlPort int
	tlsPort        int // 0 without TLS
	mtlsPort       int // 0 without a client CA
	saslPort       int // 0 without SCRAM
	opts           Options
	keep           bool // Options.Dir: Close keeps the directory
	cmd            *exec.Cmd
	exited         chan struct{}
	logPath        string
}

// sourceDir is the directory of this file: pom.xml and the cache live here.
func sourceDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// Jars makes sure the broker's jars are in the cache and returns the
// directory holding them.
func Jars(ctx context.Context) (string, error) {
	dir := sourceDir()
	libs := filepath.Join(dir, ".cache", "libs")
	if haveJars(libs) {
		return libs, nil
	}
	if _, err := exec.LookPath("mvn"); err != nil {
		return "", errors.New("the Apache Kafka broker needs Maven to fetch its jars: apt-get install maven (and openjdk-17-jre-headless)")
	}
	cmd := exec.CommandContext(ctx, "mvn", "-q", "-B", "dependency:copy-dependencies",
		"-DoutputDirectory="+libs, "-DincludeScope=runtime")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("fetch the Kafka %s jars with Maven: %w\n%s", Version, err, out)
	}
	return libs, nil
}

// haveJars tells whether libs holds the broker's jar and the tools' (a
// cache from before pom.xml named kafka-tools lacks the latter, and Maven
// adds it).
func haveJars(libs string) bool {
	for _, jar := range []string{"kafka_2.13-" + Version + ".jar", "kafka-tools-" + Version + ".jar"} {
		if _, err := os.Stat(filepath.Join(libs, jar)); err != nil {
			return false
		}
	}
	return true
}

// Start fetches the jars if needed, formats KRaft storage in a temporary
// directory (or [Options.Dir]), and starts the broker; it returns once the
// broker answers a metadata request.
func Start(ctx context.Context, opts Options) (*Broker, error) {
	// A fixed port that is taken fails before anything else. It is held
	// until the free ports are found, so that none of them is it.
	var fixed net.Listener
	if opts.Port != 0 {
		var err error
		if fixed, err = net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", opts.Port)); err != nil {
			return nil, fmt.Errorf("port %d is taken (%w): stop what listens there, or choose another port", opts.Port, err)
		}
		defer fixed.Close()
	}
	if _, err := exec.LookPath("java"); err != nil {
		return nil, errors.New("the Apache Kafka broker needs Java 17 or later: apt-get install openjdk-17-jre-headless")
	}
	libs, err := Jars(ctx)
	if err != nil {
		return nil, err
	}
	if opts.Heap == "" {
		opts.Heap = "512m"
	}
	b := &Broker{libs: libs, opts: opts}
	// Five listeners at most, each on a port of its own: Kafka refuses
	// two listeners on one port.
	ports, err := freeport.GetN(5)
	if fixed != nil {
		fixed.Close()
	}
	if err != nil {
		return nil, err
	}
	if opts.Port != 0 {
		ports[0] = opts.Port
	}
	if opts.Dir != "" {
		// Absolute: the JVM runs in it, and the configuration names
		// paths inside it.
		if b.dir, err = filepath.Abs(opts.Dir); err != nil {
			return nil, err
		}
		b.keep = true
		err = os.MkdirAll(b.dir, 0o755)
	} else {
		b.dir, err = os.MkdirTemp("", "cdc-relay-kafka-")
	}
	if err != nil {
		return nil, err
	}
	b.port, b.ctrlPort = ports[0], ports[1]
	if opts.TLS != nil {
		b.tlsPort = ports[2]
		if opts.TLS.ClientCAPEM != nil {
			b.mtlsPort = ports[3]
		}
		if opts.TLS.SCRAM {
			b.saslPort = ports[4]
		}
	}
	b.logPath = filepath.Join(b.dir, "broker.log")
	if err := b.writeConfig(); err != nil {
		b.Close()
		return nil, err
	}
	if err := b.format(); err != nil {
		b.Close()
		return nil, err
	}
	if err := b.Start(ctx); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// format formats KRaft storage, unless a broker of an earlier run in
// [Options.Dir] did.
func (b *Broker) format() error {
	if _, err := os.Stat(filepath.Join(b.dir, "data", "meta.properties")); err == nil {
		return nil
	}
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	// The first character must not be "-" (62) or "_": the storage tool's
	// argument parser reads "-…" as an option, as Kafka's own random ids
	// know. With the top bit clear, it is one of A–Z, a–f.
	id[0] &= 0x7f
	format := b.java("kafka.tools.StorageTool", "format", "-t", base64.RawURLEncoding.EncodeToString(id), "-c", b.config())
	if out, err := format.CombinedOutput(); err != nil {
		return fmt.Errorf("format KRaft storage: %w\n%s", err, out)
	}
	return nil
}

func (b *Broker) config() string { return filepath.Join(b.dir, "server.properties") }

func (b *Broker) writeConfig() error {
	cfg := map[string]string{
		"process.roles":                            "broker,controller",
		"node.id":                                  "1",
		"controller.quorum.voters":                 fmt.Sprintf("1@127.0.0.1:%d", b.ctrlPort),
		"listeners":                                fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", b.port, b.ctrlPort),
		"advertised.listeners":                     fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", b.port),
		"controller.listener.names":                "CONTROLLER",
		"listener.security.protocol.map":           "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
		"inter.broker.listener.name":               "PLAINTEXT",
		"log.dirs":                                 filepath.Join(b.dir, "data"),
		"offsets.topic.replication.factor":         "1",
		"transaction.state.log.replication.factor": "1",
		"transaction.state.log.min.isr":            "1",
		"auto.create.topics.enable":                "true",
		"num.partitions":                           "4",
		"group.initial.rebalance.delay.ms":         "0",
	}
	if err := b.tlsConfig(cfg); err != nil {
		return err
	}
	for k, v := range b.opts.Config {
		cfg[k] = v
	}
	keys := make([]string, 0, len(cfg))
	for k := range cfg {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&sb, "%s=%s\n", k, cfg[k])
	}
	if err := os.WriteFile(b.config(), []byte(sb.String()), 0o644); err != nil {
		return err
	}
	// No shutdown hook: a thread that logs first during the JVM's
	// shutdown would warn that it cannot add one ([Options.Output] shows
	// it).
	log4j := "status = warn\nshutdownHook = disable\nappender.console.type = Console\nappender.console.name = STDOUT\n" +
		"appender.console.layout.type = PatternLayout\nappender.console.layout.pattern = [%d] %p %m (%c)%n\n" +
		"rootLogger.level = warn\nrootLogger.appenderRef.stdout.ref = STDOUT\n"
	return os.WriteFile(filepath.Join(b.dir, "log4j2.properties"), []byte(log4j), 0o644)
}

// tlsConfig adds the TLS listeners to cfg, and writes their key store
// and trust store.
func (b *Broker) tlsConfig(cfg map[string]string) error {
	t := b.opts.TLS
	if t == nil {
		return nil
	}
	keystore := filepath.Join(b.dir, "keystore.pem")
	if err := os.WriteFile(keystore, append(append([]byte{}, t.KeyPEM...), t.CertPEM...), 0o600); err != nil {
		return err
	}
	add := func(name string, port int, protocol string) {
		cfg["listeners"] += fmt.Sprintf(",%s://127.0.0.1:%d", name, port)
		cfg["advertised.listeners"] += fmt.Sprintf(",%s://127.0.0.1:%d", name, port)
		cfg["listener.security.protocol.map"] += "," + name + ":" + protocol
	}
	add("SSL", b.tlsPort, "SSL")
	cfg["ssl.keystore.type"] = "PEM"
	cfg["ssl.keystore.location"] = keystore
	cfg["ssl.client.auth"] = "none"
	if t.ClientCAPEM != nil {
		truststore := filepath.Join(b.dir, "client-ca.pem")
		if err := os.WriteFile(truststore, t.ClientCAPEM, 0o644); err != nil {
			return err
		}
		add("MTLS", b.mtlsPort, "SSL")
		cfg["listener.name.mtls.ssl.client.auth"] = "required"
		cfg["listener.name.mtls.ssl.truststore.type"] = "PEM"
		cfg["listener.name.mtls.ssl.truststore.location"] = truststore
	}
	if t.SCRAM {
		add("SASL_SSL", b.saslPort, "SASL_SSL")
		cfg["listener.name.sasl_ssl.sasl.enabled.mechanisms"] = "SCRAM-SHA-256,SCRAM-SHA-512"
		for _, m := range []string{"scram-sha-256", "scram-sha-512"} {
			cfg["listener.name.sasl_ssl."+m+".sasl.jaas.config"] = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
		}
	}
	return nil
}

func (b *Broker) java(args ...string) *exec.Cmd {
	full := append([]string{
		"-Xms" + b.opts.Heap, "-Xmx" + b.opts.Heap, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dlog4j2.configurationFile=" + filepath.Join(b.dir, "log4j2.properties"),
		"-cp", filepath.Join(b.libs, "*"),
	}, args...)
	cmd := exec.Command("java", full...)
	cmd.Dir = b.dir
	return cmd
}

// Addr is the broker's host:port.
func (b *Broker) Addr() string { return fmt.Sprintf("127.0.0.1:%d", b.port) }

// Dir is the directory of the broker's configuration, log (broker.log)
// and data.
func (b *Broker) Dir() string { return b.dir }

// Exited is closed when the broker's process, started by the last Start,
// ends.
func (b *Broker) Exited() <-chan struct{} { return b.exited }

// TLSAddr is the host:port of the TLS listener, or "" without
// [Options.TLS].
func (b *Broker) TLSAddr() string {
	if b.tlsPort == 0 {
		return ""
	}
	return fmt.Sprintf("127.0.0.1:%d", b.tlsPort)
}

// SASLAddr is the host:port of the SASL_SSL listener, or "" without
// [TLSListener.SCRAM].
func (b *Broker) SASLAddr() string {
	if b.saslPort == 0 {
		return ""
	}
	return fmt.Sprintf("127.0.0.1:%d", b.saslPort)
}

// MTLSAddr is the host:port of the TLS listener that requires a client
// certificate, or "" without [TLSListener.ClientCAPEM].
func (b *Broker) MTLSAddr() string {
	if b.mtlsPort == 0 {
		return ""
	}
	return fmt.Sprintf("127.0.0.1:%d", b.mtlsPort)
}

// Start starts a stopped broker on its ports with its data and waits until
// it answers.
func (b *Broker) Start(ctx context.Context) error {
	logf, err := os.OpenFile(b.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	b.cmd = b.java("kafka.Kafka", b.config())
	var out io.Writer = logf
	if b.opts.Output != nil {
		out = io.MultiWriter(logf, b.opts.Output)
	}
	b.cmd.Stdout, b.cmd.Stderr = out, out
	if err := b.cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start Kafka: %w", err)
	}
	b.exited = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		_ = cmd.Wait()
		logf.Close()
		close(done)
	}(b.cmd, b.exited)

	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, 120*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		return err
	}
	defer cl.Close()
	for {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		err := cl.Ping(pctx)
		pcancel()
		if err == nil {
			return nil
		}
		select {
		case <-b.exited:
			return fmt.Errorf("Kafka exited while starting:\n%s", b.LogTail())
		case <-ctx.Done():
			if parent.Err() != nil {
				return fmt.Errorf("Kafka was starting: %w", parent.Err())
			}
			return fmt.Errorf("Kafka did not answer within 120s (%v):\n%s", err, b.LogTail())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Stop stops the broker cleanly (SIGTERM), keeping its data.
func (b *Broker) Stop() error {
	if b.cmd == nil || b.cmd.Process == nil {
		return nil
	}
	select {
	case <-b.exited:
		return nil
	default:
	}
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.exited:
		return nil
	case <-time.After(60 * time.Second):
		_ = b.cmd.Process.Kill()
		<-b.exited
		return errors.New("Kafka did not stop within 60s of SIGTERM; killed")
	}
}

// LogTail returns the end of the broker's log.
func (b *Broker) LogTail() string {
	data, _ := os.ReadFile(b.logPath)
	if len(data) > 4000 {
		data = data[len(data)-4000:]
	}
	return string(data)
}

// Close stops the broker and removes its data, unless they are in
// [Options.Dir].
func (b *Broker) Close() {
	if b.cmd != nil && b.cmd.Process != nil {
		select {
		case <-b.exited:
		default:
			_ = b.cmd.Process.Kill()
			<-b.exited
		}
	}
	if !b.keep {
		_ = os.RemoveAll(b.dir)
	}
}
