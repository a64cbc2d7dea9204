package config

import (
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/progress"
)

// progressKeys are the keys of progress.
var progressKeys = []knownKey[*progress.Table]{
	{"table", func(p *parser, e keyed, ctx string, t *progress.Table) {
		name, ok := p.str(e, ctx)
		if !ok {
			return
		}
		schema, table, err := decoder.ParseTable(name)
		if err != nil {
			p.problem(e.line, "%stable: %v", ctx, err)
			return
		}
		t.Schema, t.Name = schema, table
	}},
	{"publisher", text(func(t *progress.Table) *string { return &t.Publisher })},
	{"topic_column", text(func(t *progress.Table) *string { return &t.TopicColumn })},
	{"publisher_column", text(func(t *progress.Table) *string { return &t.PublisherColumn })},
	{"position_column", text(func(t *progress.Table) *string { return &t.PositionColumn })},
	{"status_column", text(func(t *progress.Table) *string { return &t.StatusColumn })},
	{"paused", list(func(t *progress.Table) *[]string { return &t.Paused }, "[PAUSED, FAILED]")},
	{"error_count_column", text(func(t *progress.Table) *string { return &t.ErrorCountColumn })},
	{"last_error_column", text(func(t *progress.Table) *string { return &t.LastErrorColumn })},
	{"published_at_column", text(func(t *progress.Table) *string { return &t.PublishedAtColumn })},
	{"updated_at_column", text(func(t *progress.Table) *string { return &t.UpdatedAtColumn })},
}

// progressBlock reads a table's progress: the team's progress table,
// each column it leaves out its default; null is nil.
func (p *parser) progressBlock(e keyed, te *tableEntry, ctx string) *progress.Table {
	if isNull(e.value) {
		return nil
	}
	entries, ok := p.mapping(e.value, te.where+".progress", "a mapping, such as {table: outbox_topic_progress, publisher: KafkaPublisher}", names(progressKeys))
	if !ok {
		return nil
	}
	var t progress.Table
	read(p, entries, ctx+"progress.", progressKeys, &t)
	switch {
	case t.Name == "":
		p.problem(e.line, "%sprogress needs table: the team's progress table, such as outbox_topic_progress", ctx)
	case t.Publisher == "":
		p.problem(e.line, "%sprogress needs publisher: the publisher column's value in the relay's rows, such as KafkaPublisher", ctx)
	}
	t = t.WithDefaults()
	return &t
}

// checkProgress checks what progress needs of the rest of its table's
// entry: the id column, which is the position the progress table holds.
func (p *parser) checkProgress(te *tableEntry, ctx string) {
	if te.t.Progress != nil && te.t.Mapping.IDColumn == "" {
		p.problem(te.lineOf("progress"), "%sprogress needs id: the id column (of an integer type) is the position the progress table holds", ctx)
	}
}
