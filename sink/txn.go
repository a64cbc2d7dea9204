package sink

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// DefaultTransactionTimeout is how long the broker lets a transaction of
// the relay stay open, unless Config.TransactionTimeout says otherwise:
// long enough to ride out a broker outage of tens of seconds without the
// transaction being aborted under the relay.
const DefaultTransactionTimeout = time.Minute

// InitTransactions loads the transactional producer's id and epoch. The
// broker fences every earlier producer with the same transactional id
// (their next request fails, see [Fenced]) and aborts the transaction they
// left open, so that what they had not committed never becomes visible to
// a read_committed consumer. Call it once, before the first [Sink.Begin].
func (s *Sink) InitTransactions(ctx context.Context) error {
	if s.txnID == "" {
		return errors.New("init transactions: the producer is not transactional")
	}
	if _, _, err := s.cl.ProducerID(ctx); err != nil {
		return fmt.Errorf("initialise the transactional producer %q: %w", s.txnID, err)
	}
	return nil
}

// TransactionalID is the producer's transactional id; empty when it is
// not transactional.
func (s *Sink) TransactionalID() string { return s.txnID }

// Begin starts a transaction: the records produced until [Sink.Commit]
// become visible to read_committed consumers together, or never. Begin
// and Commit must not run concurrently with Produce.
func (s *Sink) Begin() error {
	if err := s.cl.BeginTransaction(); err != nil {
		return fmt.Errorf("begin a Kafka transaction: %w", err)
	}
	return nil
}

// Flush waits until the broker answered every record produced so far.
func (s *Sink) Flush(ctx context.Context) error { return s.cl.Flush(ctx) }

// Commit waits for every record of the transaction to be answered and
// commits it. A commit whose records all succeeded can still fail: the
// producer was fenced ([Fenced]), the broker aborted the transaction, or
// the outcome is unknown (a connection lost during the commit). After an
// error, call [Sink.Abort]: the transaction's records never become
// visible, or, if the lost commit did land, a read_committed consumer sees
// them once; the caller must learn which from what it committed (the
// checkpoint topic), never assume. After an error, close the Sink: a new
// one's [Sink.InitTransactions] aborts the transaction if it is still
// open. (Aborting with this one instead would let franz-go recover its
// producer id, which fences whoever fenced it: a relay that lost its lead
// must not.)
func (s *Sink) Commit(ctx context.Context) error {
	if err := s.cl.Flush(ctx); err != nil {
		return fmt.Errorf("flush the Kafka transaction: %w", err)
	}
	if err := s.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return fmt.Errorf("commit the Kafka transaction: %w", err)
	}
	return nil
}

// Fenced reports whether err says that the broker fenced the transactional
// producer: a producer with the same transactional id initialised after
// it (PRODUCER_FENCED), its epoch is no longer the current one
// (INVALID_PRODUCER_EPOCH), or the coordinator's transaction is not the
// one it ends (INVALID_TXN_STATE, which is what some brokers answer the
// fenced producer's commit; a relay only ever ends the transaction it
// began). Nothing this producer does can commit again.
func Fenced(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) ||
		errors.Is(err, kerr.InvalidTxnState)
}
