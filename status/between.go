package status

import (
	"context"
	"fmt"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
)

// ParkedEvent names an event the status table holds: the commit of its
// transaction, its id and its source (the table or message source, as
// SourceTables names it; "" for a row parked before source_table existed).
type ParkedEvent struct {
	CommitLSN pglogrepl.LSN
	EventID   string
	Source    string
}

// ParkedBetween returns the events parked from the transactions whose
// commit record begins at or after from and before to, in any state (a
// row delivered since by the poller was parked all the same), each copy of
// a fanned-out event once per topic. Rows without an event id, and reload
// rows (no commit), are not returned. It reads only, through the copy
// index on (commit_lsn, event_id, topic).
func (s *Store) ParkedBetween(ctx context.Context, from, to pglogrepl.LSN) ([]ParkedEvent, error) {
	rows, _ := s.db.Query(ctx, "SELECT d.commit_lsn::text, d.event_id, coalesce(d.source_table, '') FROM "+s.table+
		" AS d WHERE d.commit_lsn >= $1::pg_lsn AND d.commit_lsn < $2::pg_lsn AND d.event_id IS NOT NULL AND "+s.mine("d"), from.String(), to.String())
	parked, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ParkedEvent, error) {
		var (
			p   ParkedEvent
			lsn string
		)
		if err := row.Scan(&lsn, &p.EventID, &p.Source); err != nil {
			return p, err
		}
		var err error
		p.CommitLSN, err = pglogrepl.ParseLSN(lsn)
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("read the events of %s parked between %s and %s: %w", s.table, from, to, err)
	}
	return parked, nil
}
