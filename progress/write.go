package progress

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// topics are the topics to write: the routes' (or the template's one),
// or, for a table whose topic is a column, those of the publisher's rows.
// A row of a topic the routes do not name is left alone: nothing tells
// the relay how far that topic got.
func (w *Writer) topics(ctx context.Context) ([]string, error) {
	if w.cfg.Source.Topics != nil {
		return w.cfg.Source.Topics, nil
	}
	t := w.cfg.Table
	rows, _ := w.db.Query(ctx, "SELECT DISTINCT "+ident(t.TopicColumn)+"::text FROM "+t.QuotedName()+
		" WHERE "+ident(t.PublisherColumn)+"::text = $1 AND "+ident(t.TopicColumn)+" IS NOT NULL", t.Publisher)
	have, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read the topics of publisher %q in %s.%s: %w", t.Publisher, t.Schema, t.Name, err)
	}
	return have, nil
}

// row is what one topic's row is to say.
type row struct {
	topic    string
	position int64
	failing  bool
	errors   int
	lastErr  *string
}

// rows are the rows of topics: the position reached, held below the
// lowest id of the topic's held rows; their failure, if one fails.
func (w *Writer) rows(topics []string, heads map[string]Head) []row {
	out := make([]row, 0, len(topics))
	for _, topic := range topics {
		r := row{topic: topic, position: w.reached}
		if h, ok := heads[topic]; ok {
			if h.Unknown {
				continue // where its held row stands is not known: left as it is
			}
			if h.HasMinID {
				r.position = min(r.position, h.MinID-1)
			}
			if h.Failing {
				r.failing, r.errors, r.lastErr = true, h.Attempts, &h.LastError
			}
		}
		out = append(out, r)
	}
	return out
}

// write adds the rows of the routes' topics that the table lacks, then
// updates each row that changes (updateSQL), in two statements: a row
// that cannot be added does not keep the others from their positions.
func (w *Writer) write(ctx context.Context, rows []row) error {
	t := w.cfg.Table
	topics, positions, failing, errs, lastErrs := make([]string, len(rows)), make([]int64, len(rows)), make([]bool, len(rows)), make([]int32, len(rows)), make([]*string, len(rows))
	for i, r := range rows {
		topics[i], positions[i], failing[i], errs[i], lastErrs[i] = r.topic, r.position, r.failing, int32(r.errors), r.lastErr
	}
	if len(w.cfg.Source.Topics) > 0 {
		_, err := w.db.Exec(ctx, "INSERT INTO "+t.QuotedName()+" ("+ident(t.TopicColumn)+", "+ident(t.PublisherColumn)+", "+ident(t.PositionColumn)+")"+
			" SELECT v.topic, $3, v.position FROM unnest($1::text[], $2::bigint[]) AS v(topic, position)"+
			" WHERE NOT EXISTS (SELECT 1 FROM "+t.QuotedName()+" AS p WHERE p."+ident(t.TopicColumn)+"::text = v.topic AND p."+ident(t.PublisherColumn)+"::text = $3)"+
			" ON CONFLICT DO NOTHING", topics, positions, t.Publisher)
		if err != nil {
			return fmt.Errorf("add the rows of publisher %q to %s.%s: %w", t.Publisher, t.Schema, t.Name, err)
		}
	}
	values := "unnest($1::text[], $2::bigint[], $3::bool[], $4::int[], $5::text[]) AS v(topic, position, failing, errors, last_error)"
	if _, err := w.db.Exec(ctx, w.updateSQL(values), topics, positions, failing, errs, lastErrs, t.Publisher); err != nil {
		return fmt.Errorf("write the positions of publisher %q in %s.%s: %w", t.Publisher, t.Schema, t.Name, err)
	}
	return nil
}

// updateSQL is the UPDATE of the rows that change, from values: the
// position, only ever higher; the error count and last error those of a
// failing topic, cleared when the position moves (as a publisher that
// resets them when it publishes), else kept.
func (w *Writer) updateSQL(values string) string {
	t := w.cfg.Table
	pos := "p." + ident(t.PositionColumn)
	grown := "GREATEST(" + pos + ", v.position)"
	moved := grown + " IS DISTINCT FROM " + pos
	set := []string{ident(t.PositionColumn) + " = " + grown}
	changed := []string{moved}
	if c := t.PublishedAtColumn; c != "" {
		set = append(set, ident(c)+" = CASE WHEN "+moved+" THEN now() ELSE p."+ident(c)+" END")
	}
	if c := t.ErrorCountColumn; c != "" {
		set = append(set, ident(c)+" = CASE WHEN v.failing THEN v.errors WHEN "+moved+" THEN 0 ELSE p."+ident(c)+" END")
		changed = append(changed, "v.failing AND p."+ident(c)+" IS DISTINCT FROM v.errors")
	}
	if c := t.LastErrorColumn; c != "" {
		lastErr := "v.last_error"
		if t.lastErrorMax > 0 {
			lastErr = fmt.Sprintf("left(v.last_error, %d)", t.lastErrorMax)
		}
		none := "NULL"
		if t.lastErrorNotNull {
			none = "''"
		}
		set = append(set, ident(c)+" = CASE WHEN v.failing THEN "+lastErr+" WHEN "+moved+" THEN "+none+" ELSE p."+ident(c)+" END")
		changed = append(changed, "v.failing AND p."+ident(c)+" IS DISTINCT FROM "+lastErr)
	}
	if c := t.UpdatedAtColumn; c != "" {
		set = append(set, ident(c)+" = now()")
	}
	return "UPDATE " + t.QuotedName() + " AS p SET " + strings.Join(set, ", ") + " FROM " + values +
		" WHERE p." + ident(t.TopicColumn) + "::text = v.topic AND p." + ident(t.PublisherColumn) + "::text = $6 AND (" + strings.Join(changed, " OR ") + ")"
}
