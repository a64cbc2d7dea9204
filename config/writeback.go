package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cdc-relay/cdc-relay/writeback"
)

// writeBack reads a table's write_back, recording the line of each of its
// keys in te.wbAt; null is nil. What its keys must say of each other, and
// of the table's id, is checked by checkWriteBack once the whole entry is
// read.
func (p *parser) writeBack(e keyed, te *tableEntry, ctx string) *writeback.Columns {
	if isNull(e.value) {
		return nil
	}
	entries, ok := p.mapping(e.value, te.where+".write_back", "a mapping, such as {status_column: status, delivered: DELIVERED, failed: FAILED}", names(writeBackKeys))
	if !ok {
		return nil
	}
	te.wbAt = make(map[string]int, len(entries))
	for _, we := range entries {
		te.wbAt[we.key] = we.line
	}
	var c writeback.Columns
	read(p, entries, ctx+"write_back.", writeBackKeys, &c)
	var missing []string
	for _, m := range []struct{ key, v string }{{"status_column", c.StatusColumn}, {"delivered", c.Delivered}, {"failed", c.RetryingValue() + c.DeadValue()}} {
		if m.v == "" {
			missing = append(missing, m.key)
		}
	}
	if len(missing) > 0 {
		p.problem(e.line, "%swrite_back needs %s: the status column and its values for a delivered and a parked event", ctx, strings.Join(missing, ", "))
	} else if c.Failed == "" && (c.Retrying == "" || c.Dead == "") {
		p.problem(e.line, "%swrite_back needs failed, the value of an event %s: or set both retrying (the value while the relay will try it again) and dead (once it is given up on)", ctx,
			map[bool]string{true: "given up on", false: "the relay will try again"}[c.Dead == ""])
	}
	return &c
}

// pending reads write_back.pending: a list of distinct, non-empty status
// values; null is nil. A single value is not a list: it is refused, as
// the file's other lists refuse it.
func (p *parser) pending(e keyed, ctx string) []string {
	values, ok := p.list(e, ctx, "[PENDING, PROCESSING]")
	if !ok || values == nil {
		return nil
	}
	if len(values) == 0 {
		p.problem(e.line, "%spending is empty: list the status values that mean \"not delivered yet\", such as [PENDING], or remove pending", ctx)
		return nil
	}
	for i, v := range values {
		if j := slices.Index(values[:i], v); j >= 0 {
			p.problem(deref(e.value.Content[i]).Line, "%spending lists %q twice (pending[%d] and pending[%d]): keep one", ctx, v, j, i)
			return nil
		}
	}
	return values
}

// wbLineOf is the line of write_back's key, or write_back's own line when
// the key is not set.
func (te *tableEntry) wbLineOf(key string) int {
	if l := te.wbAt[key]; l > 0 {
		return l
	}
	return te.lineOf("write_back")
}

// checkWriteBack checks what write_back's keys say of each other: each
// status value means one outcome (a pending value is never the delivered
// or the dead value: only the retrying value may be one; an event given
// up on never reads as delivered), and each column the relay writes is a
// column of its own, none of them the id column.
func (p *parser) checkWriteBack(te *tableEntry, ctx string) {
	c := te.t.WriteBack
	if c == nil {
		return
	}
	if c.Delivered != "" && c.Failed == c.Delivered {
		p.problem(te.wbLineOf("failed"), "%swrite_back.failed %q is write_back.delivered too: a parked event would read as delivered; give each its own value", ctx, c.Failed)
	}
	if c.Retrying != "" && c.Retrying == c.Delivered {
		p.problem(te.wbLineOf("retrying"), "%swrite_back.retrying %q is write_back.delivered too: an event still to be tried again would read as delivered; give each its own value", ctx, c.Retrying)
	}
	if c.Dead != "" && c.Dead == c.Delivered {
		p.problem(te.wbLineOf("dead"), "%swrite_back.dead %q is write_back.delivered too: an event given up on would read as delivered; give dead a value of its own, or leave it out (it is then failed's)", ctx, c.Dead)
	}
	if c.Failed != "" && c.Retrying != "" && c.Dead != "" && c.Dead != c.Failed && c.Retrying != c.Failed {
		p.problem(te.wbLineOf("failed"), "%swrite_back.failed %q is never written: retrying is the value while the relay tries an event again, and dead once it gives up; remove failed", ctx, c.Failed)
	}
	for _, v := range c.Pending {
		switch {
		case v == c.DeadValue():
			key := "dead"
			if c.Failed == v {
				key = "failed"
			}
			p.problem(te.wbLineOf("pending"), "%swrite_back.pending lists %q, which is write_back.%s too, the value of an event given up on: "+
				"the relay would write a pending value for an event it no longer sends; %s", ctx, v, key, pendingDeadFix(c, v))
		case v == c.Delivered:
			p.problem(te.wbLineOf("pending"), "%swrite_back.pending lists %q, which is write_back.delivered too: a delivered event would read as not sent yet; remove it from one of them", ctx, v)
		}
	}
	p.checkWriteBackColumns(te, ctx)
}

// pendingDeadFix says what to do when pending lists v, the dead value.
func pendingDeadFix(c *writeback.Columns, v string) string {
	if c.Dead == "" && c.Retrying == "" {
		return fmt.Sprintf("if %q means \"tried again later\" to the table's old poller, replace failed with retrying: %s and dead: (the value of an event given up on); else remove it from pending", v, v)
	}
	return "remove it from one of them"
}

// checkWriteBackColumns checks that the id column and the columns
// write_back writes are distinct: each takes a value of its own.
func (p *parser) checkWriteBackColumns(te *tableEntry, ctx string) {
	c := te.t.WriteBack
	named := map[string]string{} // column → the key that named it first
	if id := te.t.Mapping.IDColumn; id != "" {
		named[id] = "id"
	}
	for _, wc := range c.WrittenColumns() {
		col := struct{ key, name string }{wc.Key, wc.Name}
		key := "write_back." + col.key
		if first, ok := named[col.name]; ok {
			why := "the relay writes a value of its own into each"
			if first == "id" {
				why = "write-back finds the row by the id column and never writes it"
			}
			p.problem(te.wbLineOf(col.key), "%s%s names column %q, as %s does: %s; name another column", ctx, key, col.name, first, why)
			continue
		}
		named[col.name] = key
	}
}
