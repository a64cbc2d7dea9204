package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/internal/pgconnect"
	"github.com/cdc-relay/cdc-relay/preflight"
	"github.com/cdc-relay/cdc-relay/relay"
)

// messagePrefixUsage describes --message-prefix, for run and migrate.
const messagePrefixUsage = "also relay the transactional messages of this `prefix` that the application writes with " +
	"pg_logical_emit_message(true, prefix, envelope), or cdc_relay.emit(...), which migrate creates: an outbox without a table. " +
	"Each message's content is a JSON envelope of topic, key, id, headers and payload; one that is not is parked DEAD. " +
	"Needs PostgreSQL 14 or later; empty relays no messages. Such events are in no table: recover cannot publish them again"

// registerMessagePrefix registers --message-prefix on fs into prefix.
func registerMessagePrefix(fs *flag.FlagSet, prefix *string) {
	fs.StringVar(prefix, "message-prefix", "", messagePrefixUsage)
}

// addMessagePrefix adds to cfg the message source --message-prefix names,
// its content an envelope, its topics checked by allowedTopics (the
// --allowed-topics value, else the config file's allowed_topics, as a
// config file's sources get them), with or without a table; nothing when
// prefix is empty. A prefix cfg relays already (a config file's
// messages:) is refused.
func addMessagePrefix(cfg *relay.Config, prefix, allowedTopics string) error {
	if prefix == "" {
		return nil
	}
	m := decoder.MessageMapping{Prefix: prefix, AllowedTopics: allowedTopics}
	if err := m.Validate(); err != nil {
		return usageError{"--message-prefix: " + err.Error()}
	}
	for _, have := range cfg.Messages {
		if have.Prefix == prefix {
			return usageError{fmt.Sprintf("--message-prefix %q: the config file's messages: relays this prefix already; give it once", prefix)}
		}
	}
	cfg.Messages = append(cfg.Messages, m)
	return nil
}

// checkMessagesServer refuses, when cfg has message sources, a server that
// cannot send them (PostgreSQL before 14), as run does at start: for
// migrate, before it changes anything. It connects to url only then.
func checkMessagesServer(ctx context.Context, url string, cfg relay.Config) error {
	if len(cfg.Messages) == 0 {
		return nil
	}
	conn, err := pgconnect.Open(ctx, url, pgconnect.Options{RuntimeParams: map[string]string{"application_name": "cdc-relay migrate"}})
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return preflight.CheckMessageSources(ctx, conn, cfg.Messages)
}

// sayMessagesNotRecovered tells recover's user once, on w, that the
// message sources of cfg cannot be published again: their events are in
// no table, only in the WAL, and recover publishes the tables' rows only.
func sayMessagesNotRecovered(w io.Writer, cfg relay.Config) {
	if len(cfg.Messages) == 0 {
		return
	}
	names := cfg.SourceNames()[len(cfg.Tables):]
	fmt.Fprintf(w, "recover publishes again the outbox tables' rows only: messages (%s) are in no table, so those of a gap in the WAL cannot be published again\n",
		strings.Join(names, ", "))
}
