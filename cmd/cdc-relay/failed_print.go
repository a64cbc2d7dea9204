package main

// How `cdc-relay failed` prints status rows: a table for people, one
// record in full, and JSON for scripts.

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/cdc-relay/cdc-relay/status"
)

// tableWidth is the width a list's lines are cut to fit: $COLUMNS, else 120.
func tableWidth() int {
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n >= 40 {
		return n
	}
	return 120
}

// writeTable writes rows as a table for people: the id of the event each
// waits for ("-" for none; the column only when one does), the outbox
// table the
// event came from ("-" when the row does not say), the publisher (the
// column only when a row is not Kafka's), the event id cut to the
// first 8 characters (a UUID's first group; show prints both whole), the
// last error cut so that a line fits tableWidth.
func writeTable(w io.Writer, rows []status.Row, now time.Time) error {
	waits := slices.ContainsFunc(rows, func(r status.Row) bool { return r.WaitsFor != 0 })
	publishers := slices.ContainsFunc(rows, notKafkas)
	// shown leaves out the columns no row needs: the publisher's (5),
	// what each waits for (2).
	shown := func(line []string) []string {
		if !publishers {
			line = slices.Delete(line, 5, 6)
		}
		if !waits {
			line = slices.Delete(line, 2, 3)
		}
		return line
	}
	head := shown([]string{"ID", "STATUS", "WAITS FOR", "ATTEMPTS", "TABLE", "PUBLISHER", "TOPIC", "EVENT ID", "NEXT ATTEMPT", "LAST ERROR"})
	cells := [][]string{head}
	for _, r := range rows {
		cells = append(cells, shown([]string{
			strconv.FormatInt(r.ID, 10), r.Status, waitsFor(r), strconv.Itoa(r.Attempts), cutText(tableCell(r.SourceTable), 30),
			cutText(tableCell(r.Publisher), 20), cutText(tableCell(r.Topic), 40), cutText(tableCell(r.EventID), 9), nextAttempt(r, now), tableCell(r.LastError),
		}))
	}
	const pad = 2
	used := 0 // the width of the columns before the last error
	for col := 0; col < len(head)-1; col++ {
		width := 0
		for _, line := range cells {
			width = max(width, utf8.RuneCountInString(line[col]))
		}
		used += width + pad
	}
	errWidth := max(30, tableWidth()-used)
	tw := tabwriter.NewWriter(w, 0, 0, pad, ' ', 0)
	for i, line := range cells {
		if i > 0 {
			line[len(line)-1] = cutText(line[len(line)-1], errWidth)
		}
		fmt.Fprintln(tw, strings.Join(line, "\t"))
	}
	return tw.Flush()
}

// notKafkas reports whether r is a row of another publisher than Kafka's:
// list and show then name its publisher, and say nothing of a Kafka row's,
// as before the status table knew publishers.
func notKafkas(r status.Row) bool {
	return r.Publisher != "" && r.Publisher != status.KafkaPublisher
}

// waitsFor is the id of the event r waits for, or "-".
func waitsFor(r status.Row) string {
	if r.WaitsFor == 0 {
		return "-"
	}
	return strconv.FormatInt(r.WaitsFor, 10)
}

// nextAttempt says when the poller tries a FAILED row next: "due", or
// "in 4m10s"; "-" for other states, which it does not try.
func nextAttempt(r status.Row, now time.Time) string {
	if r.Status != status.Failed {
		return "-"
	}
	if d := r.NextAttemptAt.Sub(now); d > 0 {
		return "in " + roughly(d)
	}
	return "due"
}

// roughly writes d for people, to the second under a minute, else to the
// minute, and in days from two days on: 45s, 12m, 1h, 1h30m, 3d.
func roughly(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%ds", max(1, int(d.Round(time.Second)/time.Second)))
	}
	d = d.Round(time.Minute)
	h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
	switch {
	case h == 0:
		return fmt.Sprintf("%dm", m)
	case h >= 48:
		return fmt.Sprintf("%dd", (h+12)/24)
	case m == 0:
		return fmt.Sprintf("%dh", h)
	}
	return fmt.Sprintf("%dh%dm", h, m)
}

// tableCell makes s one line of printable text: control characters (tabs,
// newlines) become spaces, and an empty cell is "-".
func tableCell(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	if s = strings.TrimSpace(s); s == "" {
		return "-"
	}
	return s
}

// cutText shortens s to n characters, the last one "…" when it cut.
func cutText(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// The record of `failed show`.

// writeRecord writes the whole of row for people.
func writeRecord(w io.Writer, r status.Row, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	field := func(name, value string) { fmt.Fprintf(tw, "%s:\t%s\n", name, value) }
	field("id", strconv.FormatInt(r.ID, 10))
	st := r.Status
	if !r.Skipped.IsZero() {
		st += " (skipped " + formatTime(r.Skipped) + ")"
	}
	field("status", st)
	field("waits for", waitsFor(r))
	field("attempts", strconv.Itoa(r.Attempts))
	next := "-"
	if r.Status == status.Failed {
		next = formatTime(r.NextAttemptAt) + " (" + nextAttempt(r, now) + ")"
	}
	field("next attempt", next)
	field("last error", tableCell(r.LastError))
	field("table", tableCell(r.SourceTable))
	if notKafkas(r) {
		field("publisher", tableCell(r.Publisher))
	}
	field("topic", r.Topic)
	if r.OriginalTopic != "" {
		field("original topic", tableCell(r.OriginalTopic)+" (the topic it was parked for; an operator corrected it)")
	}
	if r.Placed {
		field("partition", strconv.Itoa(int(r.Partition))+" (its table's partition column)")
	}
	field("event id", dashIfEmpty(r.EventID))
	field("key", inlineBytes(r.Key))
	field("timestamp", formatTime(r.Timestamp))
	field("commit lsn", r.CommitLSN.String())
	field("created", formatTime(r.CreatedAt))
	field("updated", formatTime(r.UpdatedAt))
	field("delivered", formatTime(r.DeliveredAt))
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Headers) == 0 {
		fmt.Fprintln(w, "headers: -")
	} else {
		fmt.Fprintln(w, "headers:")
	}
	for _, h := range r.Headers {
		v := "(null)"
		if h.Value != nil {
			v = inlineBytes(h.Value)
		}
		fmt.Fprintf(w, "  %s: %s\n", tableCell(h.Key), v)
	}
	_, err := fmt.Fprintf(w, "value:\n%s\n", indentLines(blockBytes(r.Value), "  "))
	return err
}

// inlineBytes renders bytes on one line: the text when it is printable
// UTF-8, quoted when it has control characters, else base64.
func inlineBytes(b []byte) string {
	switch {
	case b == nil:
		return "(null)"
	case len(b) == 0:
		return `""`
	case !utf8.Valid(b):
		return "base64:" + base64.StdEncoding.EncodeToString(b)
	case strings.ContainsFunc(string(b), unicode.IsControl):
		return strconv.Quote(string(b))
	}
	return string(b)
}

// blockBytes renders a value over several lines: pretty-printed JSON,
// else text, else base64.
func blockBytes(b []byte) string {
	if b == nil {
		return "(null)"
	}
	if json.Valid(b) {
		var out strings.Builder
		enc := json.NewEncoder(&out)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(json.RawMessage(b)); err == nil {
			return strings.TrimSuffix(out.String(), "\n")
		}
	}
	if utf8.Valid(b) {
		return string(b)
	}
	return fmt.Sprintf("(%d bytes, not UTF-8; base64:)\n%s", len(b), base64.StdEncoding.EncodeToString(b))
}

func indentLines(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}

// formatTime is RFC 3339 in UTC to the second, or "-" for no time.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// writeIndentedJSON writes v indented, without escaping <, > and &.
func writeIndentedJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
