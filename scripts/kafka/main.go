// Command kafka runs, for a person trying the relay, the Apache Kafka
// broker the tests run against (internal/kafkatest: one KRaft node from the
// jars Maven fetches) on a fixed port, and Kafka's topic tool and console
// consumer from the same jars, without the Kafka release.
//
//	go run ./scripts/kafka [-port 9092] [-dir DIR]         # make kafka
//	go run ./scripts/kafka [-port 9092] topics ARG...       # make kafka-topics ARGS='--list'
//	go run ./scripts/kafka [-port 9092] consume TOPIC [ARG...]  # make kafka-consume TOPIC=outbox.event.order
//
// The broker runs in the foreground on 127.0.0.1:PORT until Ctrl-C, its
// data in a temporary directory that it removes then, or in DIR, which it
// keeps (and starts from, the next time). topics runs
// org.apache.kafka.tools.TopicCommand with --bootstrap-server
// localhost:PORT and the arguments given; consume runs
// org.apache.kafka.tools.consumer.ConsoleConsumer on the topic from its
// start, printing each record's key and headers, until Ctrl-C.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cdc-relay/cdc-relay/internal/kafkatest"
)

// defaultPort is Kafka's own, which the docs and examples name.
const defaultPort = 9092

func main() {
	flag.Usage = func() {
		fmt.Fprint(os.Stderr, `usage: go run ./scripts/kafka [-port N] [-dir DIR]      a Kafka broker in the foreground, until Ctrl-C
       go run ./scripts/kafka [-port N] topics ARG...    Kafka's topic tool (kafka-topics.sh) against it
       go run ./scripts/kafka [-port N] consume TOPIC [ARG...]  Kafka's console consumer on TOPIC, from its start
`)
		flag.PrintDefaults()
	}
	portFlag := flag.String("port", strconv.Itoa(defaultPort), "the broker's port on 127.0.0.1 (make's KAFKA_PORT)")
	dir := flag.String("dir", "", "keep the broker's data in this directory rather than a temporary one (make's KAFKA_DIR)")
	flag.Parse()
	port, err := parsePort(*portFlag)
	if err != nil {
		fail(err)
	}
	args := flag.Args()
	if len(args) == 0 {
		if err := runBroker(port, *dir); err != nil {
			fail(err)
		}
		return
	}
	var class string
	switch args[0] {
	case "topics":
		class = topicClass
		args = topicArgs(port, args[1:])
	case "consume":
		if len(args) < 2 || args[1] == "" {
			fail(errors.New("consume: name the topic, e.g. make kafka-consume TOPIC=outbox.event.order"))
		}
		class = consumerClass
		args = consumeArgs(port, args[1], args[2:])
	default:
		flag.Usage()
		os.Exit(2)
	}
	os.Exit(runTool(class, args))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "kafka:", err)
	os.Exit(1)
}

// parsePort reads a port number, as make's KAFKA_PORT gives it.
func parsePort(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return defaultPort, nil
	}
	p, err := strconv.Atoi(s)
	if err != nil || p < 1 || p > 65535 {
		return 0, fmt.Errorf("port %q: want a number from 1 to 65535 (KAFKA_PORT=9093)", s)
	}
	return p, nil
}

// runBroker starts the broker, says where it listens, and waits for
// Ctrl-C (SIGINT, or SIGTERM, SIGHUP), then stops it cleanly and removes
// its temporary directory.
func runBroker(port int, dir string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	fmt.Fprintf(os.Stderr, "Starting Apache Kafka %s on localhost:%d (the first start fetches its jars with Maven)…\n", kafkatest.Version, port)
	b, err := kafkatest.Start(ctx, kafkatest.Options{Port: port, Dir: dir, Output: os.Stdout})
	if err != nil && ctx.Err() != nil {
		return errors.New("stopped while starting")
	}
	if err != nil {
		return err
	}
	fmt.Println(banner(port, b.Dir(), dir != ""))
	select {
	case <-ctx.Done():
	case <-b.Exited():
		b.Close()
		return fmt.Errorf("Kafka exited by itself; the end of its log (%s):\n%s", filepath.Join(b.Dir(), "broker.log"), b.LogTail())
	}
	// The terminal's Ctrl-C reached the JVM too (one process group), and
	// Kafka began its clean shutdown; Stop sends SIGTERM, for a signal
	// sent to this process alone. A second Ctrl-C kills it.
	stopped := make(chan error, 1)
	go func() { stopped <- b.Stop() }()
	again := make(chan os.Signal, 1)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	fmt.Fprintln(os.Stderr, "Stopping Kafka…")
	select {
	case err = <-stopped:
	case <-again:
		fmt.Fprintln(os.Stderr, "Killing Kafka.")
	}
	b.Close()
	if dir == "" {
		fmt.Fprintf(os.Stderr, "Stopped; removed %s.\n", b.Dir())
	} else {
		fmt.Fprintf(os.Stderr, "Stopped; its data stay in %s.\n", b.Dir())
	}
	return err
}

// banner is the line that says where the broker listens and how to use it.
func banner(port int, dir string, kept bool) string {
	makeVar := ""
	if port != defaultPort {
		makeVar = fmt.Sprintf(" KAFKA_PORT=%d", port)
	}
	data := dir + ", removed on exit"
	if kept {
		data = dir
	}
	return fmt.Sprintf("Kafka %s listens on localhost:%d (data in %s): run the relay with --kafka-brokers localhost:%d; "+
		"list topics: make kafka-topics%s ARGS=--list; read one: make kafka-consume%s TOPIC=outbox.event.order; Ctrl-C stops it.",
		kafkatest.Version, port, data, port, makeVar, makeVar)
}

// The tools' main classes in Kafka 4.4's kafka-tools jar (kafka-topics.sh
// and kafka-console-consumer.sh run these).
const (
	topicClass    = "org.apache.kafka.tools.TopicCommand"
	consumerClass = "org.apache.kafka.tools.consumer.ConsoleConsumer"
)

func bootstrap(port int) string { return fmt.Sprintf("localhost:%d", port) }

// topicArgs are the topic tool's arguments: the broker's, then the
// caller's.
func topicArgs(port int, args []string) []string {
	return append([]string{"--bootstrap-server", bootstrap(port)}, args...)
}

// consumeArgs are the console consumer's: the topic from its start, each
// record with its key and headers, then the caller's arguments (e.g.
// --max-messages 1). The consumer group protocol of KIP-848, which Kafka
// 4.4's broker serves, spares the line the tool prints to advertise it.
func consumeArgs(port int, topic string, args []string) []string {
	return append([]string{"--bootstrap-server", bootstrap(port), "--topic", topic, "--from-beginning",
		"--formatter-property", "print.key=true", "--formatter-property", "print.headers=true",
		"--command-property", "group.protocol=consumer"}, args...)
}

// javaArgs are the JVM's arguments to run a tool's main class from the
// jars in libs, logging at level warn to stderr (log4j2 is the
// configuration file), so that stdout has the tool's output alone.
// Without log4j's shutdown hook: the console consumer's thread that logs
// first during Ctrl-C's shutdown would warn that it cannot add it.
func javaArgs(libs, log4j2, class string, args []string) []string {
	return append([]string{"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dlog4j2.configurationFile=" + log4j2, "-Dlog4j2.shutdownHookEnabled=false",
		"-cp", filepath.Join(libs, "*"), class}, args...)
}

// toolLog4j2 sends the tools' log to stderr, as Kafka's own
// tools-log4j2.yaml does.
const toolLog4j2 = `status = warn
appender.stderr.type = Console
appender.stderr.name = STDERR
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = STDERR
`

// runTool runs a tool's main class with the broker's jars and returns its
// exit code.
func runTool(class string, args []string) int {
	if _, err := exec.LookPath("java"); err != nil {
		fail(errors.New("Kafka's tools need Java 17 or later: make deps-kafka"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	libs, err := kafkatest.Jars(ctx)
	cancel()
	if err != nil {
		fail(err)
	}
	log4j2 := filepath.Join(filepath.Dir(libs), "tools-log4j2.properties")
	if err := os.WriteFile(log4j2, []byte(toolLog4j2), 0o644); err != nil {
		fail(err)
	}
	cmd := exec.Command("java", javaArgs(libs, log4j2, class, args)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// Ctrl-C reaches the JVM too (one process group), which ends the
	// console consumer; this process waits for it, and passes on a signal
	// sent to it alone.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	if err := cmd.Start(); err != nil {
		fail(err)
	}
	signalled := make(chan struct{})
	go func() {
		for s := range sigs {
			select {
			case <-signalled:
			default:
				close(signalled)
			}
			_ = cmd.Process.Signal(s)
		}
	}()
	err = cmd.Wait()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
		select {
		case <-signalled:
			// Ctrl-C is how the console consumer ends: the JVM exits
			// 128+the signal's number, which is no failure here.
			if c := exit.ExitCode(); c == 128+int(syscall.SIGINT) || c == 128+int(syscall.SIGTERM) || c == 128+int(syscall.SIGHUP) {
				return 0
			}
		default:
		}
		return exit.ExitCode()
	case errors.As(err, &exit):
		return 1 // ended by a signal
	default:
		fmt.Fprintln(os.Stderr, "kafka:", err)
		return 1
	}
}
