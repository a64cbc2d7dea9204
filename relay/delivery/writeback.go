package delivery

import (
	"context"
	"sync"

	"log/slog"

	"github.com/cdc-relay/cdc-relay/outbox"
	"github.com/cdc-relay/cdc-relay/writeback"
)

// TableOutcomes tells the write-back writer the outcomes of the events of
// the tables that write them back: it maps the relay's table index to the
// writer's. Its Rows write the later outcomes of parked events, through
// the status table (status.WriteBack). A nil *TableOutcomes is no
// write-back: its methods say so.
type TableOutcomes struct {
	w     *writeback.Writer
	rows  *writeback.Rows
	index []int // by relay table: the writer's table, or -1
}

// StartWriteBack starts the write-back writer of the tables that have
// one, beside the stream, for the relay's life: a session that ends does
// not lose the outcomes of its events. It returns nil, and a no-op stop,
// when no table writes back. stop ends the writer after a last flush.
func StartWriteBack(db writeback.DB, tables []outbox.Table, log *slog.Logger) (*TableOutcomes, func(), error) {
	wb, index := outbox.WriteBackTables(tables)
	if len(wb) == 0 {
		return nil, func() {}, nil
	}
	w, err := writeback.New(db, writeback.Config{Tables: wb, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	rows, err := writeback.NewRows(wb, log)
	if err != nil {
		return nil, nil, err
	}
	o := &TableOutcomes{w: w, rows: rows, index: index}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := w.Run(ctx); err != nil {
			log.Warn("write-back stopped with outcomes unwritten: their events are sent again after a restart", "err", err)
		}
	})
	return o, func() { cancel(); wg.Wait() }, nil
}

// Waiting is the number of outcomes the writer has not written yet.
func (o *TableOutcomes) Waiting() int { return o.w.Stats().Pending }

// Rows is what writes parked events' outcomes; nil without a writer.
func (o *TableOutcomes) Rows() *writeback.Rows {
	if o == nil {
		return nil
	}
	return o.rows
}

// Delivered tells the writer that every copy of the event is in Kafka.
func (o *TableOutcomes) Delivered(table int, id []byte, done writeback.Done) {
	if i := o.index[table]; i >= 0 {
		o.w.Delivered(i, id, done)
	} else {
		done.WrittenBack()
	}
}

// WritesBack reports, by relay table, which tables write back; nil
// without a writer.
func (o *TableOutcomes) WritesBack() []bool {
	if o == nil {
		return nil
	}
	wb := make([]bool, len(o.index))
	for i, w := range o.index {
		wb[i] = w >= 0
	}
	return wb
}

// OrNil is o as the pipeline's Outcomes: nil without a writer (not an
// interface holding a nil pointer).
func (o *TableOutcomes) OrNil() Outcomes {
	if o == nil {
		return nil
	}
	return o
}

// Stats are the writer's counters, with the rows that refused a parked
// event's outcome; zero without a writer.
func (o *TableOutcomes) Stats() writeback.Stats {
	if o == nil {
		return writeback.Stats{}
	}
	s := o.w.Stats()
	s.Refused += o.rows.Refused()
	return s
}
