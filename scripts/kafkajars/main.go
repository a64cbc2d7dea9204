// Command kafkajars fetches the test broker's Apache Kafka jars into
// internal/kafkatest/.cache/libs with Maven, unless they are there, and
// prints their directory. make deps-kafka runs it, so that the steps CI
// runs side by side (the e2e suite on Apache Kafka, internal/kafkatest's
// tests, sink's test that asks the Java client) find the jars there
// rather than each run Maven into the same directory at once.
//
//	go run ./scripts/kafkajars
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/cdc-relay/cdc-relay/internal/kafkatest"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	libs, err := kafkatest.Jars(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kafkajars:", err)
		os.Exit(1)
	}
	fmt.Println(libs)
}
