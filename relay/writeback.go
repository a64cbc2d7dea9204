package relay

import (
	"context"
	"sync"

	"github.com/cdc-relay/cdc-relay/relay/delivery"
	"github.com/cdc-relay/cdc-relay/writeback"
)

// tableOutcomes tells the write-back writer the outcomes of the events of
// the tables that write them back: it maps the relay's table index to the
// writer's. rows writes the later outcomes of parked events, through the
// status table (status.WriteBack).
type tableOutcomes struct {
	w     *writeback.Writer
	rows  *writeback.Rows
	index []int // by relay table: the writer's table, or -1
}

// writeBackTables returns cfg's tables that write back, as writeback names
// them, and for each of cfg's tables its index among them, or -1.
func writeBackTables(cfg Config) ([]writeback.Table, []int) {
	var tables []writeback.Table
	index := make([]int, len(cfg.Tables))
	for i, t := range cfg.Tables {
		index[i] = -1
		if t.WriteBack == nil {
			continue
		}
		index[i] = len(tables)
		tables = append(tables, writeback.Table{
			Schema: t.Mapping.Schema, Name: t.Mapping.Table, IDColumn: t.Mapping.IDColumn, Columns: *t.WriteBack})
	}
	return tables, index
}

// WriteBackRows returns what writes the later outcomes of parked events
// to the rows of cfg's tables that write back (status.WriteBack), or nil
// when none does.
func WriteBackRows(cfg Config) (*writeback.Rows, error) {
	tables, _ := writeBackTables(cfg)
	if len(tables) == 0 {
		return nil, nil
	}
	return writeback.NewRows(tables, cfg.Logger)
}

// startWriteBack starts the write-back writer of cfg's tables that have
// one, beside the stream, for the relay's life: a session that ends does
// not lose the outcomes of its events. It returns nil, and a no-op stop,
// when no table writes back. stop ends the writer after a last flush.
func startWriteBack(db writeback.DB, cfg Config) (*tableOutcomes, func(), error) {
	tables, index := writeBackTables(cfg)
	if len(tables) == 0 {
		return nil, func() {}, nil
	}
	w, err := writeback.New(db, writeback.Config{Tables: tables, Logger: cfg.Logger})
	if err != nil {
		return nil, nil, err
	}
	rows, err := writeback.NewRows(tables, cfg.Logger)
	if err != nil {
		return nil, nil, err
	}
	o := &tableOutcomes{w: w, rows: rows, index: index}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := w.Run(ctx); err != nil {
			cfg.Logger.Warn("write-back stopped with outcomes unwritten: their events are sent again after a restart", "err", err)
		}
	})
	return o, func() { cancel(); wg.Wait() }, nil
}

// Waiting is the number of outcomes the writer has not written yet.
func (o *tableOutcomes) Waiting() int { return o.w.Stats().Pending }

// rowsOrNil is what writes parked events' outcomes; nil without a writer.
func (o *tableOutcomes) rowsOrNil() *writeback.Rows {
	if o == nil {
		return nil
	}
	return o.rows
}

// Delivered tells the writer that every copy of the event is in Kafka.
func (o *tableOutcomes) Delivered(table int, id []byte, done writeback.Done) {
	if i := o.index[table]; i >= 0 {
		o.w.Delivered(i, id, done)
	} else {
		done.WrittenBack()
	}
}

// writesBack reports, by relay table, which tables write back; nil
// without a writer.
func (o *tableOutcomes) writesBack() []bool {
	if o == nil {
		return nil
	}
	wb := make([]bool, len(o.index))
	for i, w := range o.index {
		wb[i] = w >= 0
	}
	return wb
}

// orNil is o as the pipeline's outcomes: nil without a writer (not an
// interface holding a nil pointer).
func (o *tableOutcomes) orNil() delivery.Outcomes {
	if o == nil {
		return nil
	}
	return o
}

// stats are the writer's counters, with the rows that refused a parked
// event's outcome; zero without a writer.
func (o *tableOutcomes) stats() writeback.Stats {
	if o == nil {
		return writeback.Stats{}
	}
	s := o.w.Stats()
	s.Refused += o.rows.Refused()
	return s
}
