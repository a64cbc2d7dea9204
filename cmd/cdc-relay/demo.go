package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cdc-relay/cdc-relay/internal/pgconnect"
	"github.com/cdc-relay/cdc-relay/internal/pgtemp"
	"github.com/cdc-relay/cdc-relay/relay"
	"github.com/cdc-relay/cdc-relay/replication"
	"github.com/cdc-relay/cdc-relay/setup"
)

// DemoCommand is `cdc-relay demo`: the relay end to end on a throwaway
// PostgreSQL cluster and an in-process Kafka-protocol broker.
type DemoCommand struct {
	stdout, stderr io.Writer

	events   int
	perTx    int
	logLevel string

	stopErr error // from stopping the cluster
}

const demoUsage = `Usage: cdc-relay demo [flags]

Shows the relay end to end with nothing to set up: starts a throwaway
PostgreSQL cluster from the system's binaries (wal_level = logical, a free
port, removed on exit) and an in-process Kafka-protocol broker (kfake),
migrates, runs the relay, inserts sample outbox events in a few transactions,
and prints each record as a consumer reads it back from the broker.

It ends when all --events were read back, or on Ctrl-C (SIGINT, SIGTERM or
SIGHUP), and removes the cluster either way. With --events 0 it keeps
inserting a transaction a second until Ctrl-C.
`

func (c *DemoCommand) flags() *flag.FlagSet {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.IntVar(&c.events, "events", 12, "how many events to insert and read back, `n`; 0 keeps going until Ctrl-C")
	fs.IntVar(&c.perTx, "per-tx", 3, "`n` events per transaction")
	fs.StringVar(&c.logLevel, "log-level", "warn", "the relay's log `level`: debug, info, warn or error")
	return fs
}

// Usage writes demo's help.
func (c *DemoCommand) Usage(w io.Writer) { printUsage(w, c.flags(), demoUsage, nil) }

// Run parses args and runs the demo until it read every event back or ctx
// is done. Either way the cluster and the broker are gone when it returns.
func (c *DemoCommand) Run(ctx context.Context, args []string) error {
	fs := c.flags()
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if c.events < 0 {
		return usageError{fmt.Sprintf("--events %d: want 0 (until Ctrl-C) or more", c.events)}
	}
	if c.perTx < 1 {
		return usageError{fmt.Sprintf("--per-tx %d: want 1 or more", c.perTx)}
	}
	log, err := newLogger(c.stderr, c.logLevel, "text")
	if err != nil {
		return err
	}
	err = c.run(ctx, log)
	switch {
	case c.stopErr != nil:
		return fmt.Errorf("stop the throwaway PostgreSQL cluster (a postgres process may be left "+
			"running on the data directory named here; stop it with pg_ctl -D <dir> stop): %w", c.stopErr)
	case err != nil && ctx.Err() != nil:
		// Stopped by a signal while starting: what the demo had started
		// is gone, and stopping is what was asked.
		fmt.Fprintln(c.stdout, "stopped; the throwaway PostgreSQL cluster is removed")
		return nil
	}
	return err
}

func (c *DemoCommand) run(ctx context.Context, log *slog.Logger) error {
	fmt.Fprintln(c.stdout, "starting a throwaway PostgreSQL cluster (wal_level=logical)…")
	pg, err := pgtemp.Start(ctx, pgtemp.Options{})
	if err != nil {
		return fmt.Errorf("start PostgreSQL: %w", err)
	}
	defer func() { c.stopErr = pg.Stop() }()
	broker, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(3),
		// Seeded so the consumer finds them at once; others are auto-created.
		kfake.SeedTopics(3, "outbox.event.order", "outbox.event.customer"))
	if err != nil {
		return fmt.Errorf("start in-process Kafka broker: %w", err)
	}
	defer broker.Close()
	pgURL := pg.URL("postgres")
	fmt.Fprintf(c.stdout, "PostgreSQL at %s, Kafka broker at %s\n", pgURL, strings.Join(broker.ListenAddrs(), ","))

	cfg := relay.DefaultConfig()
	cfg.PostgresURL = pgURL
	cfg.Kafka.Brokers = broker.ListenAddrs()
	cfg.Kafka.AutoCreateTopics = true
	cfg.Logger = log
	if _, err := setup.Migrate(ctx, pgURL, setupConfig(cfg), setup.Options{}); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	fmt.Fprintln(c.stdout, "migrated: public.outbox, public.outbox_delivery, public.cdc_relay_checkpoint, publication cdc_relay, slot cdc_relay")

	relayCtx, stopRelay := context.WithCancel(context.WithoutCancel(ctx))
	relayDone := make(chan error, 1)
	go func() { relayDone <- relay.Run(relayCtx, cfg) }()
	defer func() {
		stopRelay()
		if err := <-relayDone; err != nil {
			fmt.Fprintln(c.stderr, "cdc-relay demo: stop the relay:", err)
		}
	}()

	consumer, err := kgo.NewClient(
		kgo.SeedBrokers(broker.ListenAddrs()...),
		kgo.ConsumeRegex(),
		kgo.ConsumeTopics(`^outbox\.event\..*`),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.MetadataMinAge(100*time.Millisecond),
		kgo.MetadataMaxAge(500*time.Millisecond),
	)
	if err != nil {
		return fmt.Errorf("start the Kafka consumer: %w", err)
	}
	defer consumer.Close()

	// Events committed before the slot exists are not in its stream: wait
	// until the relay is streaming before inserting.
	if err := waitStreaming(ctx, pgURL, cfg.Slot, relayDone); err != nil {
		return err
	}
	insertErr := make(chan error, 1)
	go func() { insertErr <- c.insert(ctx, pgURL) }()

	fmt.Fprintln(c.stdout, "relaying; each line is a record read back from Kafka (Ctrl-C to stop):")
	read := 0
	for c.events == 0 || read < c.events {
		select {
		case err := <-insertErr:
			if err != nil && ctx.Err() == nil {
				return fmt.Errorf("insert sample events: %w", err)
			}
			insertErr = nil
		case err := <-relayDone:
			relayDone <- err // for the deferred wait
			if err != nil {
				return fmt.Errorf("relay stopped: %w", err)
			}
			return errors.New("relay stopped")
		default:
		}
		fetches := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		fetches.EachError(func(t string, p int32, err error) {
			fmt.Fprintf(c.stderr, "consume %s[%d]: %v\n", t, p, err)
		})
		fetches.EachRecord(func(r *kgo.Record) {
			read++
			c.print(r)
		})
	}
	fmt.Fprintf(c.stdout, "read %d record(s) back; stopping\n", read)
	return nil
}

func (c *DemoCommand) print(r *kgo.Record) {
	var hs []string
	for _, h := range r.Headers {
		hs = append(hs, h.Key+"="+string(h.Value))
	}
	fmt.Fprintf(c.stdout, "%s[%d]@%d key=%s value=%s\n    headers: %s\n    %s after insert\n",
		r.Topic, r.Partition, r.Offset, r.Key, r.Value, strings.Join(hs, " "),
		time.Since(r.Timestamp).Round(time.Millisecond))
}

// insert writes sample events, --per-tx to a transaction.
func (c *DemoCommand) insert(ctx context.Context, pgURL string) error {
	conn, err := pgconnect.Open(ctx, pgURL, pgconnect.Options{})
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	types := []struct{ aggregate, event string }{
		{"order", "OrderCreated"}, {"order", "OrderPaid"}, {"customer", "CustomerRegistered"}, {"order", "OrderShipped"},
	}
	for i := 0; c.events == 0 || i < c.events; {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			for j := 0; j < c.perTx && (c.events == 0 || i < c.events); j++ {
				t := types[i%len(types)]
				id := fmt.Sprintf("%s-%d", t.aggregate, 1+i/len(types))
				_, err := tx.Exec(ctx, `INSERT INTO public.outbox (aggregate_type, aggregate_id, event_type, payload, headers)
					VALUES ($1, $2, $3, $4, $5)`, t.aggregate, id, t.event,
					fmt.Sprintf(`{"%s_id": %q, "seq": %d}`, t.aggregate, id, i),
					`{"source": "cdc-relay demo"}`)
				if err != nil {
					return err
				}
				i++
			}
			return nil
		})
		if err != nil {
			return err
		}
		if c.events == 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Second):
			}
		}
	}
	return nil
}

// waitStreaming waits until a walsender streams the slot.
func waitStreaming(ctx context.Context, pgURL, slot string, relayDone chan error) error {
	conn, err := pgconnect.Open(ctx, pgURL, pgconnect.Options{})
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	deadline := time.After(60 * time.Second)
	for {
		active, err := replication.SlotActive(ctx, conn, slot)
		if err != nil {
			return err
		}
		if active {
			return nil
		}
		select {
		case err := <-relayDone:
			relayDone <- err
			return fmt.Errorf("relay stopped before streaming: %v", err)
		case <-deadline:
			return errors.New("the relay did not start streaming within 60s")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
