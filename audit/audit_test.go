package audit

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/cdc-relay/cdc-relay/backfill"
)

// fakeRows is a RowReader of rows.
type fakeRows []Row

func (f fakeRows) ReadRows(_ context.Context, add func(Row)) error {
	for _, r := range f {
		add(r)
	}
	return nil
}

// fakeRecords is a RecordReader of records; it remembers the topics it
// was asked for.
type fakeRecords struct {
	recs   []Record
	topics []string
	err    error
}

func (f *fakeRecords) ReadRecords(_ context.Context, topics []string, r Reads) error {
	f.topics = topics
	if f.err != nil {
		return f.err
	}
	r.Total(int64(len(f.recs)))
	for _, t := range topics {
		if !slices.ContainsFunc(f.recs, func(r Record) bool { return r.Topic == t }) {
			r.Absent(t)
		}
	}
	for _, rec := range f.recs {
		r.See(rec)
	}
	return nil
}

// row is a keyed row of id n on topic, ordered by n.
func row(n int, key, topic string) Row {
	return Row{ID: []byte(fmt.Sprint(n)), Key: []byte(key), Topics: []string{topic}, Order: int64(n), HasOrder: true}
}

// rec is a record of id n at partition 0, offset off.
func rec(n int, topic string, off int64) Record {
	return Record{Topic: topic, Offset: off, ID: []byte(fmt.Sprint(n)), HasID: true}
}

// ordered is a row of id on topic t, key k, of order n, placed by the
// partition column or not.
func ordered(id string, n int64, placed bool) Row {
	return Row{ID: []byte(id), Key: []byte("k"), Topics: []string{"t"}, Order: n, HasOrder: true, Placed: placed}
}

// idRec is a record of id on topic t at partition p, offset off.
func idRec(id string, p int32, off int64) Record {
	return Record{Topic: "t", Partition: p, Offset: off, ID: []byte(id), HasID: true}
}

// keyed are recs with the key of the row of their id, where they have
// none.
func keyed(rows []Row, recs []Record) []Record {
	out := slices.Clone(recs)
	for i, rec := range out {
		if j := slices.IndexFunc(rows, func(r Row) bool { return string(r.ID) == string(rec.ID) }); j >= 0 && rec.Key == nil {
			out[i].Key = rows[j].Key
		}
	}
	return out
}

// delivered are the records of rows, in their order, at offsets from 0
// of each topic.
func delivered(rows []Row) []Record {
	next := map[string]int64{}
	var out []Record
	for _, r := range rows {
		for _, t := range r.Topics {
			out = append(out, Record{Topic: t, Offset: next[t], ID: r.ID, HasID: true, Key: r.Key})
			next[t]++
		}
	}
	return out
}

func TestCheck(t *testing.T) {
	rows := []Row{row(1, "a", "t1"), row(2, "a", "t1"), row(3, "b", "t1"), row(4, "a", "t2"), row(5, "b", "t1")}
	clean := delivered(rows)
	for _, tc := range []struct {
		name  string
		rows  []Row
		recs  []Record
		order string
		want  Result
	}{
		{"clean", rows, clean, "id", Result{}},
		{"missing", rows, clean[1:], "id", Result{MissingCount: 1, Missing: []Missing{{ID: "1", Topic: "t1", Key: "a"}}}},
		{"duplicate", rows, append(clean[:len(clean):len(clean)], rec(3, "t1", 9)), "id",
			Result{DuplicateCount: 1, Duplicates: []Duplicate{{ID: "3", Topic: "t1", Records: 2}}}},
		{"wrong topic", rows, append(clean[:len(clean):len(clean)], rec(4, "t1", 9)), "id",
			Result{WrongTopicCount: 1, WrongTopic: []WrongTopic{{ID: "4", Topic: "t1", Offset: 9, Want: []string{"t2"}}}}},
		{"swapped", rows, []Record{rec(2, "t1", 0), rec(1, "t1", 1), rec(3, "t1", 2), rec(4, "t2", 0), rec(5, "t1", 3)}, "id",
			Result{OutOfOrderCount: 1, OutOfOrder: []OutOfOrder{{Topic: "t1", Key: "a", Earlier: Position{ID: "1", Offset: 1}, Later: Position{ID: "2", Offset: 0}}}}},
		{"swapped, no order column", rows, []Record{rec(2, "t1", 0), rec(1, "t1", 1), rec(3, "t1", 2), rec(4, "t2", 0), rec(5, "t1", 3)}, "", Result{}},
		{"other keys' order is free", rows, []Record{rec(3, "t1", 0), rec(1, "t1", 1), rec(5, "t1", 2), rec(2, "t1", 3), rec(4, "t2", 0)}, "id", Result{}},
		{"a key across partitions", rows, []Record{rec(1, "t1", 0), {Topic: "t1", Partition: 1, Offset: 0, ID: []byte("2"), HasID: true}, rec(3, "t1", 1), rec(4, "t2", 0), rec(5, "t1", 2)}, "id",
			Result{OutOfOrderCount: 1, OutOfOrder: []OutOfOrder{{Topic: "t1", Key: "a", Earlier: Position{ID: "1"}, Later: Position{ID: "2", Partition: 1}}}}},
		{"a key placed on two partitions by its rows", []Row{{ID: []byte("1"), Key: []byte("a"), Topics: []string{"t1"}, Order: 1, HasOrder: true, Placed: true},
			{ID: []byte("2"), Key: []byte("a"), Topics: []string{"t1"}, Order: 2, HasOrder: true, Placed: true}},
			[]Record{{Topic: "t1", Partition: 1, Offset: 0, ID: []byte("2"), HasID: true}, {Topic: "t1", Partition: 0, Offset: 5, ID: []byte("1"), HasID: true}}, "id", Result{}},
		{"a duplicate later does not reorder", rows, append(clean[:len(clean):len(clean)], rec(1, "t1", 9)), "id",
			Result{DuplicateCount: 1, Duplicates: []Duplicate{{ID: "1", Topic: "t1", Records: 2}}}},
		{"records of other rows", rows, append(clean[:len(clean):len(clean)], rec(99, "t1", 9), Record{Topic: "t1", Offset: 10}), "id", Result{}},
		{"equal order values are not compared", []Row{{ID: []byte("x"), Key: []byte("k"), Topics: []string{"t"}, HasOrder: true}, {ID: []byte("y"), Key: []byte("k"), Topics: []string{"t"}, HasOrder: true}},
			[]Record{rec(0, "t", 0), {Topic: "t", Offset: 0, ID: []byte("y"), HasID: true}, {Topic: "t", Offset: 1, ID: []byte("x"), HasID: true}}, "created_at", Result{}},
		{"a tie hides no earlier row", []Row{ordered("a", 1, false), ordered("b", 2, false), ordered("c", 2, false)},
			[]Record{idRec("c", 0, 0), idRec("a", 0, 1), idRec("b", 0, 2)}, "created_at",
			Result{OutOfOrderCount: 1, OutOfOrder: []OutOfOrder{{Topic: "t", Key: "k", Earlier: Position{ID: "a", Offset: 1}, Later: Position{ID: "c"}}}}},
		{"each later row before an earlier one counts once", []Row{ordered("a", 1, false), ordered("b", 2, false), ordered("c", 3, false)},
			[]Record{idRec("b", 0, 0), idRec("c", 0, 1), idRec("a", 0, 2)}, "id",
			Result{OutOfOrderCount: 2, OutOfOrder: []OutOfOrder{{Topic: "t", Key: "k", Earlier: Position{ID: "a", Offset: 2}, Later: Position{ID: "b"}},
				{Topic: "t", Key: "k", Earlier: Position{ID: "a", Offset: 2}, Later: Position{ID: "c", Offset: 1}}}}},
		{"a tie in order after an earlier row", []Row{ordered("a", 1, false), ordered("b", 2, false), ordered("c", 2, false)},
			[]Record{idRec("a", 0, 0), idRec("c", 0, 1), idRec("b", 0, 2)}, "created_at", Result{}},
		{"placed rows: a partition's order across another's", []Row{ordered("a", 1, true), ordered("b", 2, true), ordered("c", 3, true)},
			[]Record{idRec("b", 1, 0), idRec("c", 0, 3), idRec("a", 0, 5)}, "id",
			Result{OutOfOrderCount: 1, OutOfOrder: []OutOfOrder{{Topic: "t", Key: "k", Earlier: Position{ID: "a", Offset: 5}, Later: Position{ID: "c", Offset: 3}}}}},
		{"a placed row and an unplaced one on two partitions", []Row{ordered("a", 1, false), ordered("b", 2, true)},
			[]Record{idRec("a", 0, 0), idRec("b", 1, 0)}, "id",
			Result{OutOfOrderCount: 1, OutOfOrder: []OutOfOrder{{Topic: "t", Key: "k", Earlier: Position{ID: "a"}, Later: Position{ID: "b", Partition: 1}}}}},
		{"another table's record of a colliding id is no duplicate", rows, append(clean[:len(clean):len(clean)], Record{Topic: "t1", Offset: 9, ID: []byte("1"), HasID: true, Key: []byte("other")}), "id", Result{}},
		{"another table's record of a colliding id ahead of the row's", rows,
			[]Record{{Topic: "t1", Offset: 0, ID: []byte("2"), HasID: true, Key: []byte("other")}, rec(1, "t1", 1), rec(2, "t1", 2), rec(3, "t1", 3), rec(4, "t2", 0), rec(5, "t1", 4)}, "id", Result{}},
		{"another table's record of a colliding id on another topic", rows, append(clean[:len(clean):len(clean)], Record{Topic: "t1", Offset: 9, ID: []byte("4"), HasID: true, Key: []byte("other")}), "id", Result{}},
		{"keyless rows have no order", []Row{{ID: []byte("1"), KeyNull: true, Topics: []string{"t"}, Order: 1, HasOrder: true}, {ID: []byte("2"), KeyNull: true, Topics: []string{"t"}, Order: 2, HasOrder: true}},
			[]Record{rec(2, "t", 0), rec(1, "t", 1)}, "id", Result{}},
		{"poison and unrouted", []Row{{ID: []byte("1"), Key: []byte("k"), Poison: "topic not allowed"}, {ID: []byte("2"), Key: []byte("k")}}, nil, "id",
			Result{MissingCount: 1, Missing: []Missing{{ID: "1", Key: "k", Reason: "topic not allowed"}}}},
		{"fan-out: one topic missing", []Row{{ID: []byte("1"), Key: []byte("k"), Topics: []string{"t1", "t2"}}}, []Record{rec(1, "t2", 0)}, "id",
			Result{MissingCount: 1, Missing: []Missing{{ID: "1", Topic: "t1", Key: "k"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Check(context.Background(), Config{}, fakeRows(tc.rows), &fakeRecords{recs: keyed(tc.rows, tc.recs)}, func() string { return tc.order })
			if err != nil {
				t.Fatal(err)
			}
			got := findings(res)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("findings:\n got %+v\nwant %+v", got, tc.want)
			}
			if res.Clean() != reflect.DeepEqual(tc.want, Result{}) {
				t.Errorf("Clean() = %v", res.Clean())
			}
		})
	}
}

// findings is res's findings alone.
func findings(res Result) Result {
	return Result{MissingCount: res.MissingCount, DuplicateCount: res.DuplicateCount, WrongTopicCount: res.WrongTopicCount, OutOfOrderCount: res.OutOfOrderCount,
		Missing: res.Missing, Duplicates: res.Duplicates, WrongTopic: res.WrongTopic, OutOfOrder: res.OutOfOrder}
}

// TestCheckCountsAndTopics: the counts, the topics read (the rows' and
// Config.Topics), the limit on listed findings, and progress.
func TestCheckCountsAndTopics(t *testing.T) {
	var rows []Row
	for i := range 10 {
		rows = append(rows, row(i, fmt.Sprint(i), "t1"))
	}
	recs := &fakeRecords{recs: keyed(rows, []Record{rec(0, "t1", 0), rec(0, "t1", 1), rec(42, "t1", 2)})}
	var last backfill.Progress
	res, err := Check(context.Background(), Config{Topics: []string{"t1", "elsewhere"}, Limit: 3, Progress: func(p backfill.Progress) { last = p }},
		fakeRows(rows), recs, func() string { return "id" })
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(recs.topics, []string{"t1", "elsewhere"}) || !reflect.DeepEqual(res.TopicsAbsent, []string{"elsewhere"}) {
		t.Errorf("topics read: %v, absent %v", recs.topics, res.TopicsAbsent)
	}
	if res.Rows != 10 || res.Expected != 10 || res.Records != 3 || res.Matched != 2 || res.Unmatched != 1 {
		t.Errorf("counts: %+v", res)
	}
	if res.MissingCount != 9 || len(res.Missing) != 3 || res.DuplicateCount != 1 {
		t.Errorf("missing %d (%d listed), duplicates %d", res.MissingCount, len(res.Missing), res.DuplicateCount)
	}
	if last.Rows != 3 || last.Total != 3 {
		t.Errorf("last progress: %+v", last)
	}
}

func TestCheckReadError(t *testing.T) {
	boom := errors.New("boom")
	_, err := Check(context.Background(), Config{}, fakeRows{row(1, "a", "t")}, &fakeRecords{err: boom}, func() string { return "" })
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
}

// TestLedgerMemory: the ledger's bytes a row, for the bound doc.go says.
func TestLedgerMemory(t *testing.T) {
	l := NewLedger(0)
	for i := range 100000 {
		l.Add(Row{ID: fmt.Appendf(nil, "%d", 1000000+i), Key: []byte("order-12345"), Topics: []string{"t"}, Order: int64(i), HasOrder: true})
	}
	per := (cap(l.entries)*48 + cap(l.ids.b) + cap(l.keys.b) + 4*(cap(l.ids.end)+cap(l.keys.end))) / 100000
	if per > 120 {
		t.Errorf("%d bytes a row", per)
	}
}

// sizedRows is a RowReader that tells its size.
type sizedRows struct{ fakeRows }

func (s sizedRows) Estimate(context.Context) int { return len(s.fakeRows) }

// TestReserve: a table's estimate sizes the ledger at once, so that its
// slices never grow to twice what they hold; a hint too low only grows.
func TestReserve(t *testing.T) {
	l := NewLedger(0)
	l.Reserve(1000)
	for i := range 1000 {
		l.Add(row(100000+i, "key", "t"))
	}
	if cap(l.entries) != 1000 || cap(l.ids.end) != 1000 || cap(l.ids.b) != 1000*7 || cap(l.keys.b) != 1000*4 {
		t.Errorf("caps: entries %d, ids %d (%d bytes), keys %d bytes", cap(l.entries), cap(l.ids.end), cap(l.ids.b), cap(l.keys.b))
	}
	l.Add(row(1, "key", "t"))
	if len(l.entries) != 1001 {
		t.Errorf("%d entries", len(l.entries))
	}
	var rows []Row
	for i := range 10 {
		rows = append(rows, row(i, "k", "t"))
	}
	res, err := Check(context.Background(), Config{}, sizedRows{rows}, &fakeRecords{recs: delivered(rows)}, func() string { return "id" })
	if err != nil || !res.Clean() || res.Matched != 10 {
		t.Fatalf("%v %+v", err, res)
	}
}

// TestCheckKafkaSends: a row is expected on the topics Kafka is sent
// only; a row whose topics all go to other publishers expects nothing.
func TestCheckKafkaSends(t *testing.T) {
	rows := []Row{row(1, "a", "orders"), row(2, "a", "hooks"), {ID: []byte("3"), Key: []byte("b"), Topics: []string{"orders", "hooks"}, Order: 3, HasOrder: true}, {ID: []byte("4"), Key: []byte("c")}}
	onlyOrders := func(topic string) bool { return topic == "orders" }
	for _, tc := range []struct {
		name      string
		sends     func(string) bool
		recs      []Record
		want      Result
		topics    []string
		elsewhere int64
		unrouted  int64
		expected  int64
		clean     bool
	}{
		{"every topic to Kafka", nil, []Record{rec(1, "orders", 0), rec(3, "orders", 1)}, Result{MissingCount: 2, Missing: []Missing{{ID: "2", Topic: "hooks", Key: "a"}, {ID: "3", Topic: "hooks", Key: "b"}}},
			[]string{"orders", "hooks"}, 0, 1, 4, false},
		{"hooks to a webhook only", onlyOrders, []Record{rec(1, "orders", 0), rec(3, "orders", 1)}, Result{}, []string{"orders"}, 1, 1, 2, true},
		{"a Kafka topic's record missing", onlyOrders, []Record{rec(1, "orders", 0)}, Result{MissingCount: 1, Missing: []Missing{{ID: "3", Topic: "orders", Key: "b"}}}, []string{"orders"}, 1, 1, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs := &fakeRecords{recs: keyed(rows, tc.recs)}
			res, err := Check(context.Background(), Config{KafkaSends: tc.sends}, fakeRows(rows), recs, func() string { return "id" })
			if err != nil {
				t.Fatal(err)
			}
			if got := findings(res); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("findings:\n got %+v\nwant %+v", got, tc.want)
			}
			if !reflect.DeepEqual(recs.topics, tc.topics) || res.Elsewhere != tc.elsewhere || res.Unrouted != tc.unrouted || res.Expected != tc.expected || res.Clean() != tc.clean {
				t.Errorf("topics %v, elsewhere %d, unrouted %d, expected %d, clean %v", recs.topics, res.Elsewhere, res.Unrouted, res.Expected, res.Clean())
			}
		})
	}
}
