package errorsdoc

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cdc-relay/cdc-relay/internal/goldentest"
)

// errorsReferencePath is the messages' reference, in the repository.
const errorsReferencePath = "docs/reference/errors.md"

// errorsReferenceRegen is the command that rewrites it.
const errorsReferenceRegen = "go test ./internal/errorsdoc/ -run TestErrorsReference -update"

// root is the repository's root, from this package's directory.
const root = "../.."

// topic is a section of the reference: its title, a sentence on the
// pages that explain what it is about (links from docs/reference/), the
// packages whose messages it lists, and parts of messages of other
// packages it lists too (a package's message about Kafka, say), which win
// over the packages.
type topic struct {
	title, about string
	pkgs         []string
	has          []string
}

// topics are the reference's sections, in the order an operator meets
// what they are about. Every package with messages is in one: a package
// that has messages and is in none fails TestErrorsReference, naming it,
// as do a package and a part that take no message.
func topics() []topic {
	return []topic{
		{"The command line and the admin endpoints", "[cli.md](cli.md) has every command and flag, and " +
			"[operating.md](../operating.md#the-http-endpoints) the endpoints that `status`, `pause`, `resume` and `failed` ask.",
			[]string{"cmd/cdc-relay", "admin"}, nil},
		{"The database: the relay's tables, the publication, the checks", "`cdc-relay migrate` prepares the database " +
			"([getting-started.md](../getting-started.md#set-up-the-database-and-run-the-relay)), and `check-config` checks a config file against it " +
			"([configuration.md](../configuration.md#checking-a-file-against-the-database-check-config)).",
			[]string{"migrations", "preflight"}, nil},
		{"Connecting to PostgreSQL", "[troubleshooting.md](../troubleshooting.md#logs-during-an-outage) has the outage lines, and " +
			"[production.md](../production.md#roles-and-grants) the roles and grants.",
			[]string{"internal/pgconnect", "internal/pgerr", "relay/pgnotice"}, []string{"the PostgreSQL URL lists"}},
		{"Leadership and standbys", "[production.md](../production.md#one-relay-per-slot-and-a-standby) explains them.",
			[]string{"leader"}, nil},
		{"The replication slot", "[failover.md](../failover.md) explains the slot over a failover, and `recover` when it is lost.",
			[]string{"replication", "slot"}, []string{`replication slot "`}},
		{"The publication and the outbox table's schema", "[failover.md](../failover.md#when-the-publication-changes) and " +
			"[configuration.md](../configuration.md#when-the-tables-schema-changes) explain what the relay does when they change.",
			[]string{"pubwatch"}, nil},
		{"Mapping rows to records", "[configuration.md](../configuration.md) and [config.md](config.md) explain the mapping.",
			[]string{"decoder", "outbox"}, nil},
		{"Running the relay", "[operating.md](../operating.md) explains a running relay.",
			[]string{"relay"}, nil},
		{"Transactional messages", "[messages.md](../messages.md) explains them.",
			[]string{"relay/pipeline"}, nil},
		{"Kafka", "[kafka.md](../kafka.md) explains the producer, its security and the topics.",
			[]string{"sink", "relay/delivery/atleastonce"}, []string{"Kafka refuses", "Kafka does not answer", "--kafka-", "SASL PLAIN"}},
		{"Webhooks", "[webhooks.md](../webhooks.md) explains the webhook publishers.",
			[]string{"relay/delivery/lanes"}, nil},
		{"Exactly-once delivery", "[exactly-once.md](../exactly-once.md) explains it.",
			[]string{"relay/delivery/exactlyonce"}, []string{"exactly-once:", "the checkpoint topic"}},
		{"Parked events and key order", "[parked-events.md](../parked-events.md) explains them.",
			[]string{"relay/delivery", "relay/keyorder", "poller", "status", "report"}, nil},
		{"Write-back", "[switching-over.md](../switching-over.md#status-write-back) explains it.",
			[]string{"writeback"}, nil},
		{"A team's progress table", "[switching-over.md](../switching-over.md#a-teams-progress-table) explains it.",
			[]string{"progress"}, nil},
		{"Retention", "[operating.md](../operating.md#keeping-the-outbox-table-small) explains it.",
			[]string{"retention"}, nil},
		{"recover", "[failover.md](../failover.md#when-the-slot-is-lost-recover) explains it.",
			[]string{"recovery", "republish"}, nil},
		{"backfill", "[backfill.md](../backfill.md) explains it.",
			[]string{"backfill"}, nil},
		{"audit", "[audit.md](../audit.md) explains it.",
			[]string{"audit"}, nil},
	}
}

// seeAlso links the messages that hold has to the page that explains
// them, from docs/reference/: troubleshooting.md's row for them where it
// has one. Each must match a message (TestErrorsReference fails on one
// that matches none); a message takes the first that matches it.
func seeAlso() []struct{ has, link string } {
	const ts = "../troubleshooting.md#"
	return []struct{ has, link string }{
		{"the relay's role lacks a privilege it needs", ts + "not-ready"},
		{"this standby could not take over", ts + "standby-not-ready"},
		{"this standby is not ready", ts + "standby-not-ready"},
		{"holds this slot's leadership lock", ts + "leader-lock"},
		{"do not exist: run `cdc-relay migrate` first", ts + "tables-missing"},
		{"does not exist: run `cdc-relay migrate`", ts + "tables-missing"},
		{"does not exist: create it with `cdc-relay migrate`", ts + "tables-missing"},
		{"creating the replication slot waits", ts + "slot-waits"},
		{"synchronized_standby_slots is not set", ts + "standby-slots"},
		{"a relay is running on slot", ts + "recover-relay-running"},
		{"Kafka refuses the relay's producer (", ts + "kafka-acl"},
		{"run migrate as the database's administrator", ts + "migrate-as-administrator"},
		{"the relay's checkpoint shows it read the slot up to", ts + "slot-gap"},
		{"ahead of the relay's checkpoint", ts + "slot-gap"},
		{"exists now but did not in the WAL", ts + "slot-cannot-decode"},
		{"The relay confirmed nothing past", ts + "publication-changed"},
		{"the unit of bigint timestamp column", ts + "recover-refuses"},
		{"recover's window on", ts + "recover-refuses"},
		{"it had when the relay last started on slot", ts + "column-gone"},
		{"The relay stopped before the first row without it", ts + "column-gone"},
		{"Kafka refuses the relay's connection", ts + "kafka-refuses"},
		{"Kafka cannot be reached", ts + "logs-during-an-outage"},
		{"Kafka broker", ts + "one-broker-away-short-blips"},
		{"PostgreSQL cannot be reached", ts + "logs-during-an-outage"},
		{"PostgreSQL refused", ts + "a-login-refused"},
		{Hole + "; the broker", ts + "kafka-refuses"}, // the flag to check, after Kafka's refusal
		{Hole + "; check --kafka-", ts + "kafka-refuses"},
		{Hole + "; if the brokers' listener", ts + "kafka-refuses"},
		{"event cannot be delivered; recording it in the status table", ts + "parked"},
		{"ignored a transactional message of a prefix", ts + "messages-ignored"},
		{"write-back refused", ts + "write-back-refused"},
		{"Kafka fenced this relay's transactional producer", ts + "fenced"},
		{"written by a relay of another database", ts + "checkpoint-of-another-database"},
		{"which this relay needs: run `cdc-relay migrate`", ts + "tables-older"},
		{"no relay answers at", ts + "no-relay-answers"},
		{"without target_session_attrs=read-write", ts + "multi-host"},
		{"the status table was emptied (TRUNCATE)", ts + "status-table-truncated"},
	}
}

// TestErrorsReference fails when docs/reference/errors.md is not what
// the source's messages make now; -update rewrites it.
func TestErrorsReference(t *testing.T) {
	msgs, err := Extract(root)
	if err != nil {
		t.Fatal(err)
	}
	goldentest.Check(t, root, errorsReferencePath, []byte(errorsReference(t, msgs)), errorsReferenceRegen)
}

// topicOf is the index in ts of the topic that lists m: the first with a
// part m has, else the one of its package; -1 for none.
func topicOf(ts []topic, m Message) int {
	if i := slices.IndexFunc(ts, func(tp topic) bool {
		return slices.ContainsFunc(tp.has, func(p string) bool { return strings.Contains(m.Text, p) })
	}); i >= 0 {
		return i
	}
	return slices.IndexFunc(ts, func(tp topic) bool { return slices.Contains(tp.pkgs, m.Package) })
}

// byTopic sorts msgs into topics' sections, each by kind, failing t for a
// package of messages in no topic, and for a topic's package or
// part that takes none.
func byTopic(t *testing.T, msgs []Message) [][]Message {
	t.Helper()
	ts := topics()
	out := make([][]Message, len(ts))
	for _, m := range msgs {
		i := topicOf(ts, m)
		if i < 0 {
			t.Fatalf("package %s has messages (%s: %q) but no topic: add it to one in topics (internal/errorsdoc/reference_test.go)", m.Package, m.Pos, m.Text)
		}
		out[i] = append(out[i], m)
	}
	for i, tp := range ts {
		for _, p := range tp.pkgs {
			if !slices.ContainsFunc(out[i], func(m Message) bool { return m.Package == p }) {
				t.Errorf("topic %q lists package %s, which has no messages of its own there: take it out of topics", tp.title, p)
			}
		}
		for _, p := range tp.has {
			if !slices.ContainsFunc(out[i], func(m Message) bool { return strings.Contains(m.Text, p) }) {
				t.Errorf("topic %q takes the messages that hold %q, and none does: take it out of topics", tp.title, p)
			}
		}
		slices.SortStableFunc(out[i], func(a, b Message) int { return int(a.Kind) - int(b.Kind) })
	}
	return out
}

// linkOf is the link of seeAlso that explains m, or "".
func linkOf(m Message) string {
	for _, l := range seeAlso() {
		if strings.Contains(m.Text, l.has) {
			return l.link
		}
	}
	return ""
}

// errorsReference generates docs/reference/errors.md from msgs, failing
// t when topics or seeAlso do not fit them.
func errorsReference(t *testing.T, msgs []Message) string {
	t.Helper()
	for _, l := range seeAlso() {
		if !slices.ContainsFunc(msgs, func(m Message) bool { return strings.Contains(m.Text, l.has) }) {
			t.Errorf("seeAlso: no message holds %q: correct it, or take it out", l.has)
		}
	}
	sections := byTopic(t, msgs)
	var b strings.Builder
	fmt.Fprintf(&b, "<!-- generated by `%s`; do not edit -->\n\n", errorsReferenceRegen)
	b.WriteString("# Errors and warnings reference\n\n")
	fmt.Fprintf(&b, "Every message cdc-relay can stop with, or warns the operator with, as its code writes it: %d messages, "+
		"by what they are about. A value filled in when the message is said (a table, a slot, a time, an error of PostgreSQL's "+
		"or Kafka's) is shown as `%s`. [troubleshooting.md](../troubleshooting.md) says what to do for the common ones; "+
		"a message that it, or another page, explains links there.\n\n", len(msgs), Hole)
	b.WriteString("The list is generated from the source ([internal/errorsdoc](../../internal/errorsdoc/doc.go) says which messages count): " +
		"every error that stops the relay, every problem `check-config` reports, every other error that says what to do " +
		"(a `GRANT`, a flag, a command), and every line logged at warn or error level with a message of the code's own. " +
		"Not here: the command line's own usage errors (an unknown flag, a value it cannot parse: exit 2), " +
		"a mistake in the config file (named with its line; [config.md](config.md) has the keys), " +
		"the lines at info level, and the errors of PostgreSQL and Kafka themselves, which a message passes on in its `" + Hole + "`.\n\n")
	b.WriteString("Each message starts with what it does:\n\n| | |\n|---|---|\n")
	for _, k := range []Kind{Stop, Check, Act, Error, Warn} {
		fmt.Fprintf(&b, "| **%s** | %s |\n", k, kindDoc(k))
	}
	b.WriteString("\n")
	for i, tp := range topics() {
		fmt.Fprintf(&b, "- [%s](#%s) (%d)\n", tp.title, goldentest.Anchor(tp.title), len(sections[i]))
	}
	for i, tp := range topics() {
		fmt.Fprintf(&b, "\n## %s\n\n%s\n\n", tp.title, tp.about)
		for _, m := range sections[i] {
			fmt.Fprintf(&b, "- **%s** %s", m.Kind, span(t, m.Text))
			if l := linkOf(m); l != "" {
				fmt.Fprintf(&b, " ([what to do](%s))", l)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// kindDoc says what a message of kind k does.
func kindDoc(k Kind) string {
	switch k {
	case Stop:
		return "the relay stops, or does not start: `run` exits 1, and starting it again does not help until it is fixed; `recover` and `backfill` end with it too"
	case Check:
		return "a check of the database against the configuration: `check-config` reports it, and `run --config` refuses to start with those of its tables"
	case Act:
		return "an error that says what to do: the command that meets it ends with it, or, in `run`, the session does (the relay tries again, unless the error stops it)"
	case Error:
		return "a line logged at level ERROR; the relay goes on"
	case Warn:
		return "a line logged at level WARN; the relay goes on"
	}
	return ""
}

// span is text as a code span of a list item, failing t for a text with
// a "|", which goldentest.Code escapes for a table cell only.
func span(t *testing.T, text string) string {
	t.Helper()
	if strings.Contains(text, "|") {
		t.Fatalf("message %q holds a |: show it in a table, or escape it otherwise", text)
	}
	return goldentest.Code(text)
}
