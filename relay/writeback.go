package relay

import (
	"context"
	"sync"

	"github.com/cdc-relay/cdc-relay/writeback"
)

// tableOutcomes tells the write-back writer the outcomes of the events of
// the tables that write them back: it maps the relay's table index to the
// writer's.
type tableOutcomes struct {
	w     *writeback.Writer
	index []int // by relay table: the writer's table, or -1
}

// startWriteBack starts the write-back writer of cfg's tables that have
// one, beside the stream, for the relay's life: a session that ends does
// not lose the outcomes of its events. It returns nil, and a no-op stop,
// when no table writes back. stop ends the writer after a last flush.
func startWriteBack(db writeback.DB, cfg Config) (*tableOutcomes, func(), error) {
	o := &tableOutcomes{index: make([]int, len(cfg.Tables))}
	var wcfg writeback.Config
	for i, t := range cfg.Tables {
		o.index[i] = -1
		if t.WriteBack == nil {
			continue
		}
		o.index[i] = len(wcfg.Tables)
		wcfg.Tables = append(wcfg.Tables, writeback.Table{
			Schema: t.Mapping.Schema, Name: t.Mapping.Table, IDColumn: t.Mapping.IDColumn, Columns: *t.WriteBack})
	}
	if len(wcfg.Tables) == 0 {
		return nil, func() {}, nil
	}
	wcfg.Logger = cfg.Logger
	w, err := writeback.New(db, wcfg)
	if err != nil {
		return nil, nil, err
	}
	o.w = w
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := w.Run(ctx); err != nil {
			cfg.Logger.Warn("write-back stopped with outcomes unwritten: those rows keep their status", "err", err)
		}
	})
	return o, func() { cancel(); wg.Wait() }, nil
}

// Delivered tells the writer that every copy of the event is in Kafka.
func (o *tableOutcomes) Delivered(table int, id []byte, done writeback.Done) {
	if i := o.index[table]; i >= 0 {
		o.w.Delivered(i, id, done)
	} else {
		done.WrittenBack()
	}
}

// Failed tells the writer that the event was parked.
func (o *tableOutcomes) Failed(table int, id []byte, reason string, done writeback.Done) {
	if i := o.index[table]; i >= 0 {
		o.w.Failed(i, id, reason, done)
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
func (o *tableOutcomes) orNil() outcomes {
	if o == nil {
		return nil
	}
	return o
}

// stats are the writer's counters; zero without a writer.
func (o *tableOutcomes) stats() writeback.Stats {
	if o == nil {
		return writeback.Stats{}
	}
	return o.w.Stats()
}
