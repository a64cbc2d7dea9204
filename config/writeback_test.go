package config

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/cdc-relay/cdc-relay/outbox"
	"github.com/cdc-relay/cdc-relay/writeback"
)

// wbTable is a table entry with write_back holding the given keys, one
// per line from line 7 on.
func wbTable(keys ...string) string {
	return "tables:\n  - table: public.outbox\n    id: id\n    value: payload\n    topic: orders\n    write_back:\n      " +
		strings.Join(keys, "\n      ") + "\n"
}

// wbBase are write_back's required keys (lines 7, 8, 9 of wbTable).
var wbBase = []string{"status_column: status", "delivered: SENT", "failed: FAILED"}

func TestParseWriteBackKeys(t *testing.T) {
	tests := []struct {
		name string
		keys []string // after wbBase
		want writeback.Columns
		cols []outbox.Column // the write_back columns Columns lists
	}{
		{name: "the required keys only", want: writeback.Columns{StatusColumn: "status", Delivered: "SENT", Failed: "FAILED"},
			cols: []outbox.Column{{Name: "status", Key: "write_back.status_column"}}},
		{name: "every key", keys: []string{"dead: DEAD_LETTERED", "pending: [NEW, PUBLISHING]", "delivered_at_column: sent_at",
			"error_column: last_error", "attempts_column: retry_count", "next_attempt_column: next_attempt_at"},
			want: writeback.Columns{StatusColumn: "status", Delivered: "SENT", Failed: "FAILED", Dead: "DEAD_LETTERED",
				Pending: []string{"NEW", "PUBLISHING"}, DeliveredAtColumn: "sent_at", ErrorColumn: "last_error",
				AttemptsColumn: "retry_count", NextAttemptColumn: "next_attempt_at"},
			cols: []outbox.Column{{Name: "status", Key: "write_back.status_column"}, {Name: "sent_at", Key: "write_back.delivered_at_column"},
				{Name: "last_error", Key: "write_back.error_column"}, {Name: "retry_count", Key: "write_back.attempts_column"},
				{Name: "next_attempt_at", Key: "write_back.next_attempt_column"}}},
		{name: "pending as a block list, one value", keys: []string{"pending:", "  - NEW"},
			want: writeback.Columns{StatusColumn: "status", Delivered: "SENT", Failed: "FAILED", Pending: []string{"NEW"}},
			cols: []outbox.Column{{Name: "status", Key: "write_back.status_column"}}},
		{name: "null keys", keys: []string{"dead: null", "pending: null", "attempts_column: null", "next_attempt_column: ~"},
			want: writeback.Columns{StatusColumn: "status", Delivered: "SENT", Failed: "FAILED"},
			cols: []outbox.Column{{Name: "status", Key: "write_back.status_column"}}},
		{name: "a poller's own lifecycle: retrying a pending value", keys: []string{"retrying: NEW", "pending: [NEW]",
			"error_column: last_error", "keep_error: true", "last_attempt_column: last_attempt_at"},
			want: writeback.Columns{StatusColumn: "status", Delivered: "SENT", Failed: "FAILED", Retrying: "NEW", Pending: []string{"NEW"},
				ErrorColumn: "last_error", KeepError: true, LastAttemptColumn: "last_attempt_at"},
			cols: []outbox.Column{{Name: "status", Key: "write_back.status_column"}, {Name: "last_error", Key: "write_back.error_column"},
				{Name: "last_attempt_at", Key: "write_back.last_attempt_column"}}},
		{name: "dead the failed value, said again", keys: []string{"dead: FAILED"},
			want: writeback.Columns{StatusColumn: "status", Delivered: "SENT", Failed: "FAILED", Dead: "FAILED"},
			cols: []outbox.Column{{Name: "status", Key: "write_back.status_column"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse("relay.yaml", []byte(wbTable(append(wbBase, tc.keys...)...)))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := f.Tables[0].WriteBack; got == nil || !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("WriteBack() = %+v, want %+v", got, tc.want)
			}
			want := append([]outbox.Column{{Name: "id", Key: "id"}, {Name: "payload", Key: "value"}}, tc.cols...)
			if got := f.Tables[0].Columns(); !reflect.DeepEqual(got, want) {
				t.Errorf("Columns() = %+v, want %+v", got, want)
			}
		})
	}
}

func TestParseWriteBackProblems(t *testing.T) {
	tests := []struct {
		name string
		keys []string // the keys of write_back, from line 7
		want []string // the problems, in order, as "line: message"
	}{
		{name: "pending a single value", keys: append(wbBase, "pending: NEW"),
			want: []string{"10: tables[0] (public.outbox): write_back.pending: want a list, such as [PENDING, PROCESSING]"}},
		{name: "pending empty", keys: append(wbBase, "pending: []"),
			want: []string{`10: tables[0] (public.outbox): write_back.pending is empty: list the status values that mean "not delivered yet", such as [PENDING], or remove pending`}},
		{name: "an empty pending value", keys: append(wbBase, "pending: [NEW, '']"),
			want: []string{"10: tables[0] (public.outbox): write_back.pending[1]: want a non-empty value"}},
		{name: "a null pending value", keys: append(wbBase, "pending:", "  - NEW", "  - null"),
			want: []string{"12: tables[0] (public.outbox): write_back.pending[1]: want a non-empty value"}},
		{name: "a pending value listed twice", keys: append(wbBase, "pending:", "  - NEW", "  - PUBLISHING", "  - NEW"),
			want: []string{`13: tables[0] (public.outbox): write_back.pending lists "NEW" twice (pending[0] and pending[2]): keep one`}},
		{name: "pending a mapping", keys: append(wbBase, "pending: {NEW: 1}"),
			want: []string{"10: tables[0] (public.outbox): write_back.pending: want a list, such as [PENDING, PROCESSING]"}},
		{name: "pending holds the delivered and the failed value", keys: append(wbBase, "pending: [NEW, SENT, FAILED]"), want: []string{
			`10: tables[0] (public.outbox): write_back.pending lists "SENT", which is write_back.delivered too: a delivered event would read as not sent yet; remove it from one of them`,
			`10: tables[0] (public.outbox): write_back.pending lists "FAILED", which is write_back.failed too, the value of an event given up on: the relay would write a pending value for an event it no longer sends; if "FAILED" means "tried again later" to the table's old poller, replace failed with retrying: FAILED and dead: (the value of an event given up on); else remove it from pending`,
		}},
		{name: "pending holds the dead value", keys: append(wbBase, "pending: [NEW, DEAD]", "dead: DEAD"), want: []string{
			`10: tables[0] (public.outbox): write_back.pending lists "DEAD", which is write_back.dead too, the value of an event given up on: the relay would write a pending value for an event it no longer sends; remove it from one of them`,
		}},
		{name: "pending holds failed, which dead says again: said once", keys: append(wbBase, "dead: FAILED", "pending: [FAILED]"), want: []string{
			`11: tables[0] (public.outbox): write_back.pending lists "FAILED", which is write_back.failed too, the value of an event given up on: the relay would write a pending value for an event it no longer sends; remove it from one of them`,
		}},
		{name: "dead the delivered value", keys: append(wbBase, "dead: SENT"), want: []string{
			`10: tables[0] (public.outbox): write_back.dead "SENT" is write_back.delivered too: an event given up on would read as delivered; give dead a value of its own, or leave it out (it is then failed's)`,
		}},
		{name: "retrying the delivered value", keys: append(wbBase, "retrying: SENT"), want: []string{
			`10: tables[0] (public.outbox): write_back.retrying "SENT" is write_back.delivered too: an event still to be tried again would read as delivered; give each its own value`,
		}},
		{name: "failed never written", keys: append(wbBase, "retrying: RETRY", "dead: DEAD"), want: []string{
			`9: tables[0] (public.outbox): write_back.failed "FAILED" is never written: retrying is the value while the relay tries an event again, and dead once it gives up; remove failed`,
		}},
		{name: "no failed, retrying alone", keys: []string{"status_column: status", "delivered: SENT", "retrying: NEW"}, want: []string{
			`6: tables[0] (public.outbox): write_back needs failed, the value of an event given up on: or set both retrying (the value while the relay will try it again) and dead (once it is given up on)`,
		}},
		{name: "failed the delivered value", keys: []string{"status_column: status", "delivered: SENT", "failed: SENT"}, want: []string{
			`9: tables[0] (public.outbox): write_back.failed "SENT" is write_back.delivered too: a parked event would read as delivered; give each its own value`,
		}},
		{name: "dead empty, a list", keys: append(wbBase, "dead: ''", "attempts_column: [a, b]"), want: []string{
			"10: tables[0] (public.outbox): write_back.dead is empty: give a value, or null (or leave the key out) for none",
			"11: tables[0] (public.outbox): write_back.attempts_column: want a single value, not a list or mapping",
		}},
		{name: "the new columns the same column", keys: append(wbBase, "attempts_column: retry", "next_attempt_column: retry"), want: []string{
			`11: tables[0] (public.outbox): write_back.next_attempt_column names column "retry", as write_back.attempts_column does: the relay writes a value of its own into each; name another column`,
		}},
		{name: "the new columns an old one's", keys: append(wbBase, "delivered_at_column: sent_at", "error_column: why",
			"attempts_column: why", "next_attempt_column: status"), want: []string{
			`12: tables[0] (public.outbox): write_back.attempts_column names column "why", as write_back.error_column does: the relay writes a value of its own into each; name another column`,
			`13: tables[0] (public.outbox): write_back.next_attempt_column names column "status", as write_back.status_column does: the relay writes a value of its own into each; name another column`,
		}},
		{name: "a column the id column", keys: append(wbBase, "attempts_column: id", "delivered_at_column: status"), want: []string{
			`10: tables[0] (public.outbox): write_back.attempts_column names column "id", as id does: write-back finds the row by the id column and never writes it; name another column`,
			`11: tables[0] (public.outbox): write_back.delivered_at_column names column "status", as write_back.status_column does: the relay writes a value of its own into each; name another column`,
		}},
		{name: "a misspelled new key", keys: append(wbBase, "attempt_column: retry_count"), want: []string{
			`10: unknown key "attempt_column" in tables[0].write_back (did you mean "attempts_column"?)`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse("relay.yaml", []byte(wbTable(tc.keys...)))
			var ps Problems
			if !errors.As(err, &ps) {
				t.Fatalf("Parse: %v (file %v), want Problems", err, f)
			}
			var got []string
			for _, p := range ps {
				got = append(got, fmt.Sprintf("%d: %s", p.Line, p.Msg))
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("problems:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestWriteBackPendingIsACopy: changing the pending values of a table's
// Clone does not change the table's.
func TestWriteBackPendingIsACopy(t *testing.T) {
	f, err := Parse("relay.yaml", []byte(wbTable(append(wbBase, "pending: [NEW, PUBLISHING]")...)))
	if err != nil {
		t.Fatal(err)
	}
	f.Tables[0].Clone().WriteBack.Pending[0] = "changed"
	if got := f.Tables[0].WriteBack.Pending; !reflect.DeepEqual(got, []string{"NEW", "PUBLISHING"}) {
		t.Errorf("Pending = %q after a change to a copy", got)
	}
}
