package pipeline

import (
	"log/slog"
	"strings"
	"time"

	"github.com/cdc-relay/cdc-relay/internal/ratelog"
)

// newUnmappedLog returns the log of the transactional messages of a
// prefix no message source maps, by label (the prefix, or "other" past
// the first 64): the first at once, then at most one line per label per
// minute with how many more there were.
func newUnmappedLog(log *slog.Logger) *ratelog.Logger {
	return ratelog.New(log, ratelog.Config{Every: time.Minute,
		Summary: "ignored more transactional messages of a prefix no messages: entry maps (other: of the prefixes past the first 64); their events are lost",
		KeyAttr: "prefix", CountAttr: "messages"})
}

// newNonTransactionalLog returns the log of the non-transactional
// messages of a mapped prefix, by prefix, at the rate of newUnmappedLog.
func newNonTransactionalLog(log *slog.Logger) *ratelog.Logger {
	return ratelog.New(log, ratelog.Config{Every: time.Minute,
		Summary: "ignored more non-transactional messages of a mapped prefix; their events are lost",
		KeyAttr: "prefix", CountAttr: "messages"})
}

// maxLoggedPrefix is how much of a prefix a log line shows: any role may
// write one of any length.
const maxLoggedPrefix = 128

// loggedPrefix is prefix as a log line shows it, cut to maxLoggedPrefix
// bytes.
func loggedPrefix(prefix string) string {
	if len(prefix) <= maxLoggedPrefix {
		return prefix
	}
	return strings.ToValidUTF8(prefix[:maxLoggedPrefix], "") + "…"
}

// ignoreUnmapped counts, and logs at a bounded rate, a transactional
// message of a prefix no message source maps: the slot moves past it, so
// the event it carries is lost (a messages: entry renamed, or an
// application writing a prefix nobody maps). Any role may write one
// (pg_logical_emit_message is PUBLIC's), so the prefixes are bounded: the
// first metrics.MaxLabelValues are their own series and log key, every
// later one counts and logs as "other", with the prefix as an example.
func (p *Pipeline) ignoreUnmapped(prefix string) {
	label := p.l.Metrics.IgnoredPrefixes.Label(prefix)
	p.l.Metrics.MessagesIgnored.WithLabelValues(label).Inc()
	if p.unmapped.Hold(label, slog.LevelWarn) {
		return
	}
	args := []any{"prefix", label}
	if label != prefix {
		args = append(args, "example_prefix", loggedPrefix(prefix))
	}
	p.unmapped.Log(label, slog.LevelWarn, "ignored a transactional message of a prefix no messages: entry maps; its event is lost: "+
		"map the prefix (messages: in the config file, or --message-prefix), or have the application write a mapped one; "+
		"if no application writes it, a role is writing messages (pg_logical_emit_message is PUBLIC's: docs/messages.md says how to restrict it)",
		args...)
}

// ignoreNonTransactional counts, and logs at a bounded rate, a
// non-transactional message of a mapped prefix: no event (it is no part
// of a commit, and may be of a transaction that rolled back). The
// prefixes are the configuration's, bounded.
func (p *Pipeline) ignoreNonTransactional(prefix string) {
	p.l.Metrics.MessagesNonTransactional.WithLabelValues(prefix).Inc()
	if p.nonTx.Hold(prefix, slog.LevelWarn) {
		return
	}
	p.nonTx.Log(prefix, slog.LevelWarn, "ignored a non-transactional message of a mapped prefix: only transactional messages are events "+
		"(it is no part of a commit, and may be of a transaction that rolled back); its event is lost: "+
		"have the application write it with pg_logical_emit_message(true, ...) or cdc_relay.emit",
		"prefix", prefix)
}
