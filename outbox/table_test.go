package outbox

import (
	"reflect"
	"testing"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/writeback"
)

// full names a column with every key Columns knows.
var full = Table{
	Mapping: decoder.Mapping{
		Schema: "app", Table: "outbox", IDColumn: "id", KeyColumn: "k", PayloadColumn: "v",
		TopicTemplate: "t.{kind}.{region}", TopicColumn: "tc", HeaderColumns: []string{"a_col", "b_col"},
		HeaderNames: []string{"a"}, HeadersColumn: "hs", TimestampColumn: "at", TagsColumn: "tags",
		Routes: []decoder.Route{{Topic: "r", RequiredTags: []string{"x"}, AnyOfTags: []string{"y"}}},
	},
	WriteBack: &writeback.Columns{StatusColumn: "st", Pending: []string{"NEW"}, DeliveredAtColumn: "da",
		ErrorColumn: "err", AttemptsColumn: "n", NextAttemptColumn: "next"},
	Adopt: "id > 4",
}

func TestColumns(t *testing.T) {
	want := []Column{
		{Name: "id", Key: "id"}, {Name: "k", Key: "key"}, {Name: "v", Key: "value"},
		{Name: "kind", Key: "topic"}, {Name: "region", Key: "topic"}, {Name: "tc", Key: "topic_column"},
		{Name: "a_col", Key: "headers.a"}, {Name: "b_col", Key: "headers.b_col"}, {Name: "hs", Key: "headers_column"},
		{Name: "at", Key: "timestamp"}, {Name: "tags", Key: "tags_column"},
		{Name: "st", Key: "write_back.status_column"}, {Name: "da", Key: "write_back.delivered_at_column"},
		{Name: "err", Key: "write_back.error_column"}, {Name: "n", Key: "write_back.attempts_column"},
		{Name: "next", Key: "write_back.next_attempt_column"},
	}
	if got := full.Columns(); !reflect.DeepEqual(got, want) {
		t.Errorf("Columns():\n got %+v\nwant %+v", got, want)
	}
	if got := full.Name(); got != "app.outbox" {
		t.Errorf("Name() = %q", got)
	}
}

func TestClone(t *testing.T) {
	c := full.Clone()
	if !reflect.DeepEqual(c, full) {
		t.Fatalf("Clone() = %+v, want %+v", c, full)
	}
	c.Mapping.HeaderColumns[0] = "changed"
	c.Mapping.HeaderNames[0] = "changed"
	c.Mapping.Routes[0].RequiredTags[0] = "changed"
	c.Mapping.Routes[0].AnyOfTags[0] = "changed"
	c.WriteBack.Pending[0] = "changed"
	c.WriteBack.StatusColumn = "changed"
	m := full.Mapping
	if m.HeaderColumns[0] != "a_col" || m.HeaderNames[0] != "a" || m.Routes[0].RequiredTags[0] != "x" ||
		m.Routes[0].AnyOfTags[0] != "y" || full.WriteBack.Pending[0] != "NEW" || full.WriteBack.StatusColumn != "st" {
		t.Errorf("changing the clone changed the table: %+v %+v", m, full.WriteBack)
	}
}
