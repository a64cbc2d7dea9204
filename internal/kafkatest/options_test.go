package kafkatest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/internal/freeport"
)

// TestTakenPortFailsFirst: a fixed port that is taken fails Start at
// once, before Java, Maven or a directory, saying so. It needs no Java.
func TestTakenPortFailsFirst(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	dir := filepath.Join(t.TempDir(), "kafka")
	_, err = Start(context.Background(), Options{Port: port, Dir: dir})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("port %d is taken", port)) {
		t.Fatalf("Start on a taken port: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Start on a taken port made %s (%v)", dir, err)
	}
}

// TestFixedPortAndDir starts a broker on a given port with its data in a
// given directory, writes a record, closes it, and starts it again there:
// Close kept the directory, and the record is still there. It starts a
// JVM, so it runs only with CDC_RELAY_TEST_KAFKA=apache.
func TestFixedPortAndDir(t *testing.T) {
	if os.Getenv("CDC_RELAY_TEST_KAFKA") != "apache" {
		t.Skip("starts Apache Kafka: set CDC_RELAY_TEST_KAFKA=apache")
	}
	t.Parallel()
	port, err := freeport.Get()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	opts := Options{Port: port, Dir: filepath.Join(t.TempDir(), "kafka")}
	b, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("127.0.0.1:%d", port); b.Addr() != want {
		t.Errorf("Addr() = %s, want %s", b.Addr(), want)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	err = cl.ProduceSync(ctx, &kgo.Record{Topic: "kept", Key: []byte("k"), Value: []byte("v")}).FirstErr()
	cl.Close()
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	if _, err := os.Stat(filepath.Join(opts.Dir, "data", "meta.properties")); err != nil {
		t.Fatalf("Close did not keep Options.Dir: %v", err)
	}

	if b, err = Start(ctx, opts); err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cl, err = kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumeTopics("kept"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	fetches := cl.PollRecords(ctx, 1)
	if err := fetches.Err(); err != nil {
		t.Fatal(err)
	}
	if recs := fetches.Records(); len(recs) != 1 || string(recs[0].Value) != "v" {
		t.Fatalf("after a restart in the same directory: %v", recs)
	}
}
