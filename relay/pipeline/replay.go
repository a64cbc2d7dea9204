package pipeline

import (
	"fmt"
	"unsafe"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/status"
)

// Exactly-once delivery with write-back. A Kafka transaction commits
// before write-back writes its rows, and the checkpoint row and the slot
// wait for the rows (heldWriteBack): a relay killed in between leaves the
// checkpoint topic ahead of the slot, and the rows of the transactions
// between them unwritten. The next session therefore starts from the slot,
// not from the topic, when a table writes back: the transactions that end
// at or before the topic's position are read again, not produced (Kafka
// has them, committed), and each of their events that was delivered is
// told to write-back again (replayed); the tracker passes them once their
// rows are written. An event parked in the status table instead (poison,
// refused, behind a held key or a paused topic) has its row written by the
// status table's transaction, or left pending until the poller delivers
// it: the window's parked events are read first and left alone.

// replayKey names an event of the window as the status table does: the
// commit of its transaction, its id and its source's name.
type replayKey struct {
	commit uint64
	id     string
	source string
}

// ReplayWindow is what a session re-reads without producing, in
// exactly-once delivery with write-back: the transactions whose commit
// begins before the checkpoint topic's position, and among their events
// those parked in the status table, which are not told to write-back.
type ReplayWindow struct {
	parked map[replayKey]struct{}
	told   int // events told to write-back again
}

// NewReplayWindow returns the window whose events parked in the status
// table are parked (status.Store.ParkedBetween).
func NewReplayWindow(parked []status.ParkedEvent) *ReplayWindow {
	w := &ReplayWindow{parked: make(map[replayKey]struct{}, len(parked))}
	for _, p := range parked {
		w.parked[replayKey{commit: uint64(p.CommitLSN), id: p.EventID, source: p.Source}] = struct{}{}
	}
	return w
}

// isParked reports whether the status table holds a copy of ev, whose
// source is named source: a row parked before source_table existed
// matches any source.
func (w *ReplayWindow) isParked(ev *decoder.Event, source string) bool {
	if len(w.parked) == 0 {
		return false
	}
	k := replayKey{commit: ev.CommitLSN, id: string(ev.ID), source: source}
	if _, ok := w.parked[k]; ok {
		return true
	}
	k.source = ""
	_, ok := w.parked[k]
	return ok
}

// replayed tells write-back again of an event of a transaction the
// checkpoint topic passed, which is in Kafka already: delivered, unless
// it went nowhere (poison, no route, no id) or the status table holds a
// copy of it (parked: its row says so, or stays pending until the poller
// delivers it). It stays in flight until its row is written.
func (p *Pipeline) replayed(msg *decoder.Message) {
	ev, l := &msg.Event, p.l
	if l.Outcomes == nil || !l.WritesBack(ev.Table) || msg.Poison != nil || len(ev.ID) == 0 || msg.Routed && len(msg.Routes) == 0 {
		return
	}
	if p.replay.isParked(ev, l.TableName(ev.Table)) {
		return
	}
	id := append([]byte(nil), ev.ID...)
	r := &rewritten{tracker: l.Tracker, pgTxn: p.reading, size: len(id) + int(unsafe.Sizeof(rewritten{}))}
	l.Tracker.Add(r.pgTxn, r.size)
	p.replay.told++
	l.Outcomes.Delivered(ev.Table, id, r)
}

// rewritten is an event of the window told to write-back again: in
// flight until its row is written.
type rewritten struct {
	tracker *checkpoint.Tracker
	pgTxn   *checkpoint.Txn
	size    int
}

// WrittenBack counts it out of flight: its row took the outcome (or never
// will).
func (r *rewritten) WrittenBack() { r.tracker.Done(r.pgTxn, r.size) }

// Xid names the transaction that inserted its row (writeback.Done).
func (r *rewritten) Xid() uint32 { return r.pgTxn.Xid() }

// replayDone says how many events the replay told write-back of, once
// the stream reached the checkpoint topic's position (at the first
// transaction it produces).
func (p *Pipeline) replayDone() {
	p.l.Log.Info(fmt.Sprintf("exactly-once with write-back: %d events Kafka had before this session were told to write-back again", p.replay.told),
		"through", p.skipBelow)
	p.replay = nil
}
