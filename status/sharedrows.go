package status

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/cdc-relay/cdc-relay/internal/outboxrow"
	"github.com/cdc-relay/cdc-relay/internal/pgdb"
)

// SharedWriteBack names the outbox tables (schema.name, as SourceTables)
// whose events other publishers send too, each parking its own copy in
// its own rows of the status table: the store writes such a table's row
// only as far as every publisher's copy allows. The row says delivered
// only once no other publisher's copy is parked (FAILED, WAITING, PAUSED,
// a reload row, DEAD), and a copy given up on (DEAD, skipped) is what the
// row says until it is retried: a failed or delivered copy of this
// publisher does not write over it. Before it reads the other copies'
// rows, the store locks the outbox row (OutboxRows.Lock), as each other
// publisher's store does before its own write: of two stores that deliver
// the last two copies at once, the second waits for the first to commit
// and then sees its copy delivered. It takes effect with WriteBack;
// tables it does not name are written as WriteBack says, without a look
// at other copies (the stores of tables only Kafka sends read no more).
func SharedWriteBack(tables ...string) Option {
	return func(s *Store) {
		if len(tables) > 0 {
			s.shared = slices.Clone(tables)
		}
	}
}

// sharedRows is the OutboxRows of a store with SharedWriteBack: writes of
// the shared tables' rows go through othersAllow.
type sharedRows struct {
	OutboxRows
	s      *Store
	shared map[string]bool
}

// shareRows wraps s.rows when SharedWriteBack named tables that write
// back; NewStore calls it once the options are applied.
func (s *Store) shareRows() {
	shared := map[string]bool{}
	for _, t := range s.shared {
		if s.rows.Writes(t) {
			shared[t] = true
		}
	}
	if len(shared) > 0 {
		s.rows = &sharedRows{OutboxRows: s.rows, s: s, shared: shared}
	}
}

// Write is OutboxRows.Write of one row, as far as the other publishers'
// copies allow.
func (r *sharedRows) Write(ctx context.Context, tx pgdb.Tx, sourceTable, id string, o outboxrow.Outcome) error {
	if !r.shared[sourceTable] || id == "" {
		return r.OutboxRows.Write(ctx, tx, sourceTable, id, o)
	}
	keep, err := r.allowed(ctx, tx, sourceTable, []outboxrow.RowOutcome{{ID: id, O: o}})
	if err != nil || len(keep) == 0 {
		return err
	}
	return r.OutboxRows.Write(ctx, tx, sourceTable, id, o)
}

// WriteMany is OutboxRows.WriteMany of the rows the other publishers'
// copies allow.
func (r *sharedRows) WriteMany(ctx context.Context, tx pgdb.Tx, sourceTable string, outs []outboxrow.RowOutcome) error {
	if !r.shared[sourceTable] || len(outs) == 0 {
		return r.OutboxRows.WriteMany(ctx, tx, sourceTable, outs)
	}
	keep, err := r.allowed(ctx, tx, sourceTable, outs)
	if err != nil || len(keep) == 0 {
		return err
	}
	return r.OutboxRows.WriteMany(ctx, tx, sourceTable, keep)
}

// others is what the other publishers' copies of an event are.
type others struct {
	dead   bool // one was given up on (DEAD, skipped)
	parked bool // one is not delivered yet
}

// allowed locks the outbox rows of outs, then reads the other
// publishers' copies of their events and returns the outcomes they
// allow (othersAllow), in their order.
func (r *sharedRows) allowed(ctx context.Context, tx pgdb.Tx, sourceTable string, outs []outboxrow.RowOutcome) ([]outboxrow.RowOutcome, error) {
	ids := make([]string, 0, len(outs))
	for _, o := range outs {
		if o.ID != "" {
			ids = append(ids, o.ID)
		}
	}
	if err := r.OutboxRows.Lock(ctx, tx, sourceTable, ids); err != nil {
		return nil, err
	}
	s := r.s
	var dead, parked []string
	if err := tx.QueryRow(ctx, "SELECT coalesce(array_agg(DISTINCT d.event_id) FILTER (WHERE d.status = 'DEAD'), '{}'),"+
		" coalesce(array_agg(DISTINCT d.event_id) FILTER (WHERE d.status <> 'DELIVERED'), '{}') FROM "+s.table+" AS d"+
		" WHERE d.source_table = $1 AND d.event_id = ANY($2) AND d.publisher <> "+s.publisherSQL, sourceTable, ids).Scan(&dead, &parked); err != nil {
		return nil, fmt.Errorf("read the other publishers' copies: %w", err)
	}
	byEvent := make(map[string]others, len(parked))
	for _, id := range parked {
		byEvent[id] = others{parked: true}
	}
	for _, id := range dead {
		byEvent[id] = others{parked: true, dead: true}
	}
	keep := make([]outboxrow.RowOutcome, 0, len(outs))
	for _, out := range outs {
		if othersAllow(out.O.State, byEvent[out.ID]) {
			keep = append(keep, out)
		}
	}
	return keep, nil
}

// othersAllow reports whether the outbox row may say state, this
// publisher's copy's, given the other publishers' copies: the row says the
// worst of them, given up on before parked before delivered.
func othersAllow(state outboxrow.State, o others) bool {
	switch state {
	case outboxrow.Dead:
		return true
	case outboxrow.Failed:
		return !o.dead
	default: // delivered
		return !o.dead && !o.parked
	}
}

// lockSharedRows locks, in tx, the outbox rows of the shared tables'
// events among outcomes, before anything else of the claim's end locks
// one: the tables in the order of their names, each one's rows in the
// order of their ids (OutboxRows.Lock). The stores of several publishers
// then lock the rows of the events they share in one order, and two
// claims' ends wait for each other rather than deadlock (dropSuperseded
// locks only the rows of the events not delivered, then writeOutcomes
// those of the rest). A store without SharedWriteBack locks nothing here.
func (s *Store) lockSharedRows(ctx context.Context, tx pgdb.Tx, due []Row, outcomes []Outcome) error {
	sr, ok := s.rows.(*sharedRows)
	if !ok {
		return nil
	}
	byID := make(map[int64]*Row, len(due))
	for i := range due {
		byID[due[i].ID] = &due[i]
	}
	events := map[string][]string{}
	for _, o := range outcomes {
		if r := byID[o.ID]; r != nil && r.EventID != "" && sr.shared[r.SourceTable] {
			events[r.SourceTable] = append(events[r.SourceTable], r.EventID)
		}
	}
	for _, t := range slices.Sorted(maps.Keys(events)) {
		if err := sr.OutboxRows.Lock(ctx, tx, t, events[t]); err != nil {
			return err
		}
	}
	return nil
}
