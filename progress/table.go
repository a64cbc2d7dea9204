package progress

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/pgdb"
)

// Table is a team's own progress table, as a config file's progress:
// block maps it: one row per (topic, publisher), with the publisher's
// last position in the topic, its status, and its errors. Column names
// left empty take the defaults of [Table.WithDefaults]: those of an event
// store's outbox_topic_progress.
type Table struct {
	// Schema and Name are the table's.
	Schema, Name string
	// Publisher is the value of the publisher column in the relay's rows:
	// the name the team's dashboards and SQL know the relay by.
	Publisher string
	// TopicColumn, PublisherColumn and PositionColumn name the columns of
	// the topic, the publisher and the last position (a bigint or another
	// integer type): required.
	TopicColumn, PublisherColumn, PositionColumn string
	// StatusColumn names the column the team pauses a (topic, publisher)
	// with: while it holds one of Paused, the relay treats the topic as
	// paused, as `cdc-relay pause` does. The relay never writes it.
	StatusColumn string
	// Paused are the values of StatusColumn that stop the topic.
	Paused []string
	// ErrorCountColumn and LastErrorColumn take the failed attempts and
	// the last error of the topic's first held event that fails, while it
	// does; they are cleared (0, and NULL or the empty string) when the
	// position moves.
	ErrorCountColumn, LastErrorColumn string
	// PublishedAtColumn takes the time the position last moved;
	// UpdatedAtColumn the time the relay last changed the row.
	PublishedAtColumn, UpdatedAtColumn string

	// lastErrorMax is the length a varchar(n) last error column takes,
	// 0 for no limit; lastErrorNotNull is true when it is NOT NULL, and
	// then takes the empty string for none (Check reads both).
	lastErrorMax     int
	lastErrorNotNull bool
}

// Defaults of the columns and paused values, those of an event store's
// outbox_topic_progress.
const (
	DefaultTopicColumn       = "topic"
	DefaultPublisherColumn   = "publisher"
	DefaultPositionColumn    = "last_position"
	DefaultStatusColumn      = "status"
	DefaultErrorCountColumn  = "error_count"
	DefaultLastErrorColumn   = "last_error"
	DefaultPublishedAtColumn = "last_published_at"
	DefaultUpdatedAtColumn   = "updated_at"
)

// DefaultPaused are the status values that stop a topic by default: an
// event store's PAUSED, and FAILED, which its own publisher skips too.
var DefaultPaused = []string{"PAUSED", "FAILED"}

// WithDefaults returns t with each column left empty set to its default,
// and Paused to DefaultPaused when empty.
func (t Table) WithDefaults() Table {
	for _, c := range []struct {
		col *string
		def string
	}{
		{&t.TopicColumn, DefaultTopicColumn}, {&t.PublisherColumn, DefaultPublisherColumn}, {&t.PositionColumn, DefaultPositionColumn},
		{&t.StatusColumn, DefaultStatusColumn}, {&t.ErrorCountColumn, DefaultErrorCountColumn}, {&t.LastErrorColumn, DefaultLastErrorColumn},
		{&t.PublishedAtColumn, DefaultPublishedAtColumn}, {&t.UpdatedAtColumn, DefaultUpdatedAtColumn},
	} {
		if *c.col == "" {
			*c.col = c.def
		}
	}
	if len(t.Paused) == 0 {
		t.Paused = DefaultPaused
	}
	return t
}

// QuotedName is the table's name, quoted as an identifier.
func (t Table) QuotedName() string { return pgx.Identifier{t.Schema, t.Name}.Sanitize() }

// PausedTopics is a SELECT of one text column: the topics the team paused
// for the relay's publisher (its status column holds a Paused value). It
// takes no arguments, so that it can stand in any query: the status
// table's claim leaves out the rows of these topics, as of those the
// pause table names. Without a status column ("", as [Check] leaves a
// table that has none), it selects nothing.
func (t Table) PausedTopics() string {
	if t.StatusColumn == "" || len(t.Paused) == 0 {
		return "SELECT NULL::text WHERE false"
	}
	values := make([]string, len(t.Paused))
	for i, v := range t.Paused {
		values[i] = pgdb.QuoteLiteral(v)
	}
	return "SELECT " + ident(t.TopicColumn) + "::text FROM " + t.QuotedName() +
		" WHERE " + ident(t.PublisherColumn) + "::text = " + pgdb.QuoteLiteral(t.Publisher) +
		" AND " + ident(t.StatusColumn) + "::text IN (" + strings.Join(values, ", ") + ") AND " + ident(t.TopicColumn) + " IS NOT NULL"
}

// ResumeSQL is the team's SQL that resumes topic for the relay's
// publisher in the table.
func (t Table) ResumeSQL(topic string) string {
	return "UPDATE " + t.QuotedName() + " SET " + ident(t.StatusColumn) + " = 'ACTIVE' WHERE " + ident(t.TopicColumn) + " = " + pgdb.QuoteLiteral(topic) +
		" AND " + ident(t.PublisherColumn) + " = " + pgdb.QuoteLiteral(t.Publisher)
}

func ident(name string) string { return pgx.Identifier{name}.Sanitize() }

// Says describes, in the team's words, what each column of the progress
// table says while the relay keeps it: what check-config prints.
func (t Table) Says() []string {
	out := []string{fmt.Sprintf("%s: the highest position up to which every event of the topic is delivered (as far as the checkpoint vouches), below the topic's held events "+
		"and ids open transactions took (not one taken from the sequence a moment before its row is inserted)", t.PositionColumn)}
	if t.StatusColumn != "" {
		out = append(out, fmt.Sprintf("%s %s: the topic is paused for publisher %s; any other value: it flows, and its parked events go first, in order (the relay never writes it)",
			t.StatusColumn, strings.Join(t.Paused, " or "), t.Publisher))
	}
	if t.ErrorCountColumn != "" || t.LastErrorColumn != "" {
		cols := strings.Trim(t.ErrorCountColumn+", "+t.LastErrorColumn, ", ")
		out = append(out, fmt.Sprintf("%s: the failed attempts and the last error of the topic's first held event that fails; cleared when the position moves", cols))
	}
	if t.PublishedAtColumn != "" {
		out = append(out, fmt.Sprintf("%s: when the position last moved", t.PublishedAtColumn))
	}
	return out
}
