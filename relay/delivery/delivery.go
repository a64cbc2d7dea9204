package delivery

import (
	"context"

	"github.com/jackc/pglogrepl"

	"github.com/cdc-relay/cdc-relay/checkpoint"
)

// Delivery is how the pipeline's events reach Kafka or the status table:
// at least once, each record on its own, or exactly once, in Kafka
// transactions that hold whole PostgreSQL transactions. Each
// implementation settles every event it is given through the session's
// Ledger: the tracker counts it out of flight once it is delivered or
// parked, never before.
//
// The stream's goroutine calls Produce, Park and EndTxn, in stream order;
// none of them waits for Kafka. Commit is called once, when the stream
// stops between transactions.
type Delivery interface {
	// Produce sends it, which the tracker counts in flight already.
	Produce(it *Inflight)
	// Park runs store, which parks it in the status table (the Ledger's
	// ParkInOrder), beside the stream.
	Park(it *Inflight, store func() bool)
	// EndTxn is told that the PostgreSQL transaction pgTxn ended at end,
	// after the tracker was.
	EndTxn(pgTxn *checkpoint.Txn, end pglogrepl.LSN)
	// Commit makes what was produced visible to consumers before the
	// stream's final status update, and returns why it could not.
	Commit(ctx context.Context) error
}
