package relay

import (
	"context"

	"github.com/jackc/pglogrepl"

	"github.com/cdc-relay/cdc-relay/checkpoint"
)

// delivery is how the pipeline's events reach Kafka or the status table:
// at least once, each record on its own (atLeastOnce), or exactly once, in
// Kafka transactions that hold whole PostgreSQL transactions (txnBatcher).
// Each implementation settles every event it is given through the
// session's ledger: the tracker counts it out of flight once it is
// delivered or parked, never before.
//
// The stream's goroutine calls produce, park and endTxn, in stream order;
// none of them waits for Kafka. commit is called once, when the stream
// stops between transactions.
type delivery interface {
	// produce sends it, which the tracker counts in flight already.
	produce(it *inflight)
	// park runs store, which parks it in the status table (ledger's
	// parkInOrder), beside the stream.
	park(it *inflight, store func() bool)
	// endTxn is told that the PostgreSQL transaction pgTxn ended at end,
	// after the tracker was.
	endTxn(pgTxn *checkpoint.Txn, end pglogrepl.LSN)
	// commit makes what was produced visible to consumers before the
	// stream's final status update, and returns why it could not.
	commit(ctx context.Context) error
}
