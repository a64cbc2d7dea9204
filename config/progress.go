package config

import (
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/outbox"
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
	entries, ok := p.mapping(e.value, te.where+".progress", "a mapping, such as {table: outbox_topic_progress, publisher: KafkaPublisher}",
		append(names(progressKeys), "publishers"))
	if !ok {
		return nil
	}
	var t progress.Table
	read(p, entries, ctx+"progress.", progressKeys, &t)
	for _, pe := range entries {
		if pe.key == "publishers" {
			te.t.ProgressPublishers = p.progressPublishers(pe, ctx+"progress.")
			te.progressPublishersLine = pe.line
		}
	}
	switch {
	case t.Name == "":
		p.problem(e.line, "%sprogress needs table: the team's progress table, such as outbox_topic_progress", ctx)
	case t.Publisher == "" && len(te.t.ProgressPublishers) == 0:
		p.problem(e.line, "%sprogress needs publisher: the publisher column's value in the relay's rows, such as KafkaPublisher "+
			"(and publishers: for the rows of webhook publishers, such as {partner: WebhookPublisher})", ctx)
	}
	t = t.WithDefaults()
	return &t
}

// progressPublishers reads progress's publishers: a mapping of a
// publisher beside Kafka (its name under publishers:) to the value of the
// publisher column in its rows; null is nil.
func (p *parser) progressPublishers(e keyed, ctx string) map[string]string {
	n := e.value
	if isNull(n) {
		return nil
	}
	const want = "a mapping of publisher to the publisher column's value in its rows, such as {partner: WebhookPublisher}"
	if n.Kind != yaml.MappingNode {
		p.problem(e.line, "%spublishers: want %s", ctx, want)
		return nil
	}
	out := map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], deref(n.Content[i+1])
		switch {
		case k.Kind != yaml.ScalarNode || k.ShortTag() == "!!merge" || k.Value == "":
			p.problem(k.Line, "%spublishers: want %s", ctx, want)
		case k.Value == outbox.KafkaPublisher:
			p.problem(k.Line, "%spublishers: kafka's rows are named by progress's publisher:, such as publisher: KafkaPublisher; remove kafka here", ctx)
		case out[k.Value] != "":
			p.problem(k.Line, "%spublishers: %q is set twice: keep one", ctx, k.Value)
		case v.Kind != yaml.ScalarNode || isNull(v) || v.Value == "":
			p.problem(k.Line, "%spublishers: %q needs the publisher column's value in its rows, such as %s: WebhookPublisher", ctx, k.Value, k.Value)
		default:
			out[k.Value] = v.Value
		}
	}
	return out
}

// checkProgress checks what progress needs of the rest of its table's
// entry: the id column, which is the position the progress table holds.
func (p *parser) checkProgress(te *tableEntry, ctx string) {
	pt := te.t.Progress
	if pt == nil {
		return
	}
	if te.t.Mapping.IDColumn == "" {
		p.problem(te.lineOf("progress"), "%sprogress needs id: the id column (of an integer type) is the position the progress table holds", ctx)
	}
	sends := te.t.AllPublishers()
	if pt.Publisher != "" && !slices.Contains(sends, outbox.KafkaPublisher) {
		p.problem(te.lineOf("progress"), "%sprogress: publisher names Kafka's rows, and the table sends nothing to kafka: "+
			"name its publishers' rows under progress's publishers:, such as {%s: WebhookPublisher}, and remove publisher", ctx, sends[0])
	}
	owner := map[string]string{}
	if pt.Publisher != "" {
		owner[pt.Publisher] = outbox.KafkaPublisher
	}
	for _, name := range slices.Sorted(maps.Keys(te.t.ProgressPublishers)) {
		team := te.t.ProgressPublishers[name]
		if !slices.Contains(sends, name) {
			p.problem(te.progressPublishersLine, "%sprogress.publishers: the table sends nothing to publisher %q (it sends to %s): remove it, or add it to the table's or a route's publishers",
				ctx, name, strings.Join(sends, ", "))
		}
		if other, ok := owner[team]; ok {
			p.problem(te.progressPublishersLine, "%sprogress.publishers: %s and %s would both keep the rows of %q: give each publisher rows of its own", ctx, other, name, team)
		}
		owner[team] = name
	}
}
