package audit

import (
	"cmp"
	"slices"
)

// Result is what an audit found. Each list holds at most the limit the
// ledger was made with; its count says how many there are.
type Result struct {
	// Table is the table audited, schema.table.
	Table string `json:"table"`
	// Rows are the rows read; Expected the records they should have made
	// (a row once per topic); Records the records read; Matched those
	// that are an expected record; Unmatched those of no row read (other
	// rows, other tables, no id header).
	Rows      int64 `json:"rows"`
	Expected  int64 `json:"expected_records"`
	Records   int64 `json:"records_read"`
	Matched   int64 `json:"records_matched"`
	Unmatched int64 `json:"records_of_other_rows"`
	// Unrouted are the rows that go to no topic (routes they match none
	// of); Poison those that cannot become a record (counted missing).
	Unrouted int64 `json:"rows_unrouted"`
	Poison   int64 `json:"rows_poison"`
	// Elsewhere are the rows whose topics go to other publishers than
	// Kafka only (Config.KafkaSends): no record of theirs is expected.
	Elsewhere int64 `json:"rows_not_to_kafka"`
	// OrderColumn is the column commit order was read from; empty when
	// order was not checked.
	OrderColumn string `json:"order_column"`
	// TopicsAbsent are the topics read that do not exist: their rows'
	// records are all missing (a topic deleted, or a mapping that names
	// it otherwise than the relay's).
	TopicsAbsent []string `json:"topics_absent"`

	MissingCount    int64        `json:"missing_count"`
	DuplicateCount  int64        `json:"duplicate_count"`
	WrongTopicCount int64        `json:"wrong_topic_count"`
	OutOfOrderCount int64        `json:"out_of_order_count"`
	Missing         []Missing    `json:"missing"`
	Duplicates      []Duplicate  `json:"duplicates"`
	WrongTopic      []WrongTopic `json:"wrong_topic"`
	OutOfOrder      []OutOfOrder `json:"out_of_order"`
}

// Missing is a row with no record on one of its topics.
type Missing struct {
	ID    string `json:"id"`
	Topic string `json:"topic,omitempty"`
	Key   string `json:"key,omitempty"`
	// Reason is why it cannot become a record, for a poison row.
	Reason string `json:"reason,omitempty"`
}

// Duplicate is a row with more than one record on one of its topics.
type Duplicate struct {
	ID      string `json:"id"`
	Topic   string `json:"topic"`
	Records int    `json:"records"`
}

// WrongTopic is a record of a row on a topic the row does not go to.
type WrongTopic struct {
	ID        string   `json:"id"`
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Offset    int64    `json:"offset"`
	Want      []string `json:"want_topics"`
}

// OutOfOrder is two rows of one topic and key whose first records are not
// in the rows' commit order: Later's record is before Earlier's in the
// partition, or in another partition.
type OutOfOrder struct {
	Topic   string   `json:"topic"`
	Key     string   `json:"key"`
	Earlier Position `json:"earlier"`
	Later   Position `json:"later"`
}

// Position is a row's first record.
type Position struct {
	ID        string `json:"id"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// Clean reports whether every expected record is there, once, on its
// topic, and in order: the audit's exit code 0.
func (r Result) Clean() bool {
	return r.MissingCount == 0 && r.DuplicateCount == 0 && r.WrongTopicCount == 0 && r.OutOfOrderCount == 0
}

// Result ends the audit: it finds the rows with no record or several,
// then checks each key's order, and returns every finding. The ledger
// must not be used after.
func (l *Ledger) Result(orderColumn string) Result {
	res := l.res
	res.OrderColumn = orderColumn
	res.Missing = slices.Clip(l.poisoned)
	for i := range l.entries {
		e := &l.entries[i]
		switch {
		case e.seen == 0:
			res.MissingCount++
			if l.listed(len(res.Missing)) {
				res.Missing = append(res.Missing, Missing{ID: string(l.ids.get(e.row)), Topic: l.topics[e.topic], Key: l.key(e)})
			}
		case e.seen > 1:
			res.DuplicateCount++
			if l.listed(len(res.Duplicates)) {
				res.Duplicates = append(res.Duplicates, Duplicate{ID: string(l.ids.get(e.row)), Topic: l.topics[e.topic], Records: int(e.seen)})
			}
		}
	}
	if orderColumn != "" {
		l.checkOrder(&res)
	}
	sortFindings(&res)
	return res
}

// sortFindings puts each list in the order of its ids (the ledger's is
// its hashes'), so that the same findings read the same.
func sortFindings(res *Result) {
	slices.SortFunc(res.Missing, func(a, b Missing) int { return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.Topic, b.Topic)) })
	slices.SortFunc(res.Duplicates, func(a, b Duplicate) int { return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.Topic, b.Topic)) })
	slices.SortFunc(res.WrongTopic, func(a, b WrongTopic) int { return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.Topic, b.Topic)) })
	slices.SortFunc(res.OutOfOrder, func(a, b OutOfOrder) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Key, b.Key), cmp.Compare(a.Earlier.ID, b.Earlier.ID))
	})
}

// key is e's key as a finding names it.
func (l *Ledger) key(e *entry) string {
	if e.flags&flagKeyNull != 0 {
		return ""
	}
	return string(l.keys.get(e.row))
}

// checkOrder finds the keys whose records are out of the rows' order: it
// sorts the seen, keyed entries by topic, key and order, and walks each
// key's groups of equal order, comparing each entry with the entries of
// every lower order (through the one at the greatest offset of each
// partition), so that a tie does not hide an earlier row whose record
// came after it. Entries of one order are not compared with each other.
// Each later row out of order is counted once.
func (l *Ledger) checkOrder(res *Result) {
	es := slices.DeleteFunc(l.entries, func(e entry) bool {
		return e.seen == 0 || e.flags&flagKeyNull != 0 || e.flags&flagOrder == 0
	})
	slices.SortFunc(es, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.key, b.key), cmp.Compare(a.order, b.order), cmp.Compare(a.row, b.row))
	})
	var before []earlier
	for i := 0; i < len(es); {
		if i == 0 || es[i].topic != es[i-1].topic || es[i].key != es[i-1].key {
			before = before[:0]
		}
		j := i + 1
		for j < len(es) && es[j].topic == es[i].topic && es[j].key == es[i].key && es[j].order == es[i].order {
			j++
		}
		for k := i; k < j; k++ {
			if a := passed(es, before, &es[k]); a >= 0 {
				l.outOfOrder(res, &es[a], &es[k])
			}
		}
		for k := i; k < j; k++ {
			before = fold(es, before, k)
		}
		i = j
	}
}

// earlier are the entries of lower orders than those being checked, of
// one key and topic, in one partition: the index in the entries of the
// one at the greatest offset, and of the one at the greatest offset among
// the rows the partition column did not place (-1: none).
type earlier struct {
	partition   int32
	last, loose int
}

// fold adds es[k] to before.
func fold(es []entry, before []earlier, k int) []earlier {
	e := &es[k]
	n := slices.IndexFunc(before, func(b earlier) bool { return b.partition == e.partition })
	if n < 0 {
		before = append(before, earlier{partition: e.partition, last: -1, loose: -1})
		n = len(before) - 1
	}
	b := &before[n]
	if b.last < 0 || es[b.last].offset < e.offset {
		b.last = k
	}
	if e.flags&flagPlaced == 0 && (b.loose < 0 || es[b.loose].offset < e.offset) {
		b.loose = k
	}
	return before
}

// passed is the index in es of an entry of a lower order than e (one of
// before's) whose record e's should have come after but did not: one
// later in e's partition, else one in another partition, unless both
// rows were placed by the partition column (Kafka keeps no order between
// partitions); -1 when there is none.
func passed(es []entry, before []earlier, e *entry) int {
	other := -1
	for _, b := range before {
		switch {
		case b.partition == e.partition:
			if es[b.last].offset > e.offset {
				return b.last
			}
		case other >= 0:
		case e.flags&flagPlaced == 0:
			other = b.last
		case b.loose >= 0:
			other = b.loose
		}
	}
	return other
}

// outOfOrder counts b, a row whose record is not after a's, of a lower
// order, and lists them.
func (l *Ledger) outOfOrder(res *Result, a, b *entry) {
	res.OutOfOrderCount++
	if l.listed(len(res.OutOfOrder)) {
		res.OutOfOrder = append(res.OutOfOrder, OutOfOrder{Topic: l.topics[a.topic], Key: l.key(a),
			Earlier: Position{ID: string(l.ids.get(a.row)), Partition: a.partition, Offset: a.offset},
			Later:   Position{ID: string(l.ids.get(b.row)), Partition: b.partition, Offset: b.offset}})
	}
}
