package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/config"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/preflight"
)

// sourcesText says what a config file relays, for check-config's first
// line: "2 tables", "1 table, 1 message source", "2 message sources".
func sourcesText(f *config.File) string {
	switch {
	case len(f.Messages) == 0:
		return plural(len(f.Tables), "table")
	case len(f.Tables) == 0:
		return plural(len(f.Messages), "message source")
	}
	return plural(len(f.Tables), "table") + ", " + plural(len(f.Messages), "message source")
}

// messageProblems is what the database lacks for relaying messages, the
// same for every message source: a server before PostgreSQL 14
// ([preflight.CheckMessages]). A message source names no column or table,
// so nothing else of the database is checked for it.
func messageProblems(ctx context.Context, conn *pgx.Conn) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	p, err := preflight.CheckMessages(ctx, conn)
	if err != nil || p == nil {
		return nil, err
	}
	return []string{p.String()}, nil
}

// printMessageSource prints a message source's block: "ok", or the
// problems of messageProblems (each source shares them), then how a message of its prefix becomes a record. There is no
// sample: messages are in the WAL only, never in a table to read.
// allowedTopics is the file's allowed_topics, which applies when m sets
// none.
func printMessageSource(w io.Writer, m decoder.MessageMapping, allowedTopics string, problems []string) {
	fmt.Fprintln(w)
	if len(problems) == 0 {
		fmt.Fprintf(w, "%s: ok\n", m.Name())
	} else {
		fmt.Fprintf(w, "%s: %s\n", m.Name(), plural(len(problems), "problem"))
		for _, p := range problems {
			fmt.Fprintf(w, "  %s\n", p)
		}
	}
	fmt.Fprintf(w, "  transactional messages with prefix %s (pg_logical_emit_message(true, %s, content)) become records:\n",
		strconv.Quote(m.Prefix), sqlText(m.Prefix))
	for _, line := range messageRecord(m, allowedTopics) {
		fmt.Fprintf(w, "    %-9s  %s\n", line[0], line[1])
	}
}

// messageRecord describes, line by line, how a message of m's prefix
// becomes a record: each line a label and its text.
func messageRecord(m decoder.MessageMapping, allowedTopics string) [][2]string {
	walID := "the message's WAL position, such as 0/16B3748 (the same when it is sent again)"
	var lines [][2]string
	if m.PayloadOnly {
		lines = append(lines, [2]string{"content", "the record value, whole (payload_only)"}, [2]string{"topic", m.Topic})
		key := "(none: Kafka spreads the records over the partitions)"
		if m.KeyField != "" {
			key = fmt.Sprintf("the content's member %q (a string or a number)", m.KeyField)
		}
		id := walID
		if m.IDField != "" {
			id = fmt.Sprintf("the content's member %q, else %s", m.IDField, walID)
		}
		lines = append(lines, [2]string{"key", key}, [2]string{"id", id})
	} else {
		topic := "the envelope's topic; a message that names none is parked"
		if m.Topic != "" {
			topic = "the envelope's topic, else " + m.Topic
		}
		lines = append(lines,
			[2]string{"content", "an envelope: a JSON object of topic, key, id, headers and payload"},
			[2]string{"topic", topic},
			[2]string{"key", "the envelope's key (none without one)"},
			[2]string{"id", "the envelope's id, else " + walID})
	}
	if !m.PayloadOnly {
		allowed := "every topic but Kafka's own (those that start with _ or connect-)"
		if a := cmp.Or(m.AllowedTopics, allowedTopics); a != "" {
			allowed = "those that match " + a
		}
		lines = append(lines, [2]string{"topics", allowed + "; a message for another is parked"})
	}
	return append(lines, [2]string{"timestamp", "the transaction's commit time"})
}

// sqlText is s as an SQL string literal.
func sqlText(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
