package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/cdc-relay/cdc-relay/status"
)

// This file is ?publisher= of the admin endpoints: the parked events and
// the paused topics of one of the relay's publishers, Kafka's by default
// (the relay's own methods, which tell its streaming session too), else a
// webhook publisher's, through its status store (Relay.Failures).

// publisherStore reads ?publisher=: nil when the request names none, or
// names Kafka; else the status store of the publisher it names. For a
// name that is not a publisher's or not one of the relay's, or a relay
// not connected yet, it answers the error itself and returns false.
func (s *Server) publisherStore(w http.ResponseWriter, req *http.Request) (*status.Store, bool) {
	q := req.URL.Query()
	if !q.Has("publisher") {
		return nil, true
	}
	name := q.Get("publisher")
	if name == "" {
		writeError(w, http.StatusBadRequest, errors.New("?publisher= is empty: name a publisher, or leave ?publisher= out for Kafka's"))
		return nil, false
	}
	if err := status.ValidPublisher(name); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return nil, false
	}
	if name == status.KafkaPublisher {
		return nil, true
	}
	store, err := s.relay.Failures(name)
	if err != nil {
		writeError(w, errorStatus(err), err)
		return nil, false
	}
	return store, true
}

// otherPublisher is the error of an id asked for among one publisher's
// rows that is another publisher's: not found among the first's
// (status.ErrNotFound), and whose it is.
type otherPublisher struct {
	id        int64
	publisher string // the row's
}

func (e otherPublisher) Error() string {
	if e.publisher == status.KafkaPublisher {
		return fmt.Sprintf("id %d is Kafka's: leave ?publisher= out", e.id)
	}
	return fmt.Sprintf("id %d is the webhook publisher %s's: add ?publisher=%s", e.id, e.publisher, e.publisher)
}

func (e otherPublisher) Unwrap() error { return status.ErrNotFound }

// whose returns err, the error of acting on id among the rows of store
// (nil: Kafka's), or, when err is that id is not found and it is another
// publisher's row, an otherPublisher that says whose.
func (s *Server) whose(ctx context.Context, store *status.Store, id int64, err error) error {
	if !errors.Is(err, status.ErrNotFound) {
		return err
	}
	if store == nil {
		kafka, ferr := s.relay.Failures(status.KafkaPublisher)
		if ferr != nil {
			return err
		}
		store = kafka
	}
	owners, oerr := status.PublishersOf(ctx, store, []int64{id})
	if p, ok := owners[id]; oerr == nil && ok && p != store.Publisher() {
		return otherPublisher{id: id, publisher: p}
	}
	return err
}
