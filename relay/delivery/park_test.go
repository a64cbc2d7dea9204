package delivery

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/cdc-relay/cdc-relay/decoder"
	"github.com/cdc-relay/cdc-relay/status"
)

// nopStore is a FailureStore that stores nothing.
type nopStore struct{}

func (nopStore) Failed(context.Context, *decoder.Event, error) error  { return nil }
func (nopStore) Dead(context.Context, *decoder.Event, error) error    { return nil }
func (nopStore) Waiting(context.Context, *decoder.Event, error) error { return nil }
func (nopStore) Paused(context.Context, *decoder.Event) error         { return nil }
func (nopStore) EachHeldKey(context.Context, func(status.Key)) error  { return nil }
func (nopStore) StillHeld(context.Context, []status.Key) ([]status.Key, error) {
	return nil, nil
}
func (nopStore) PausedTopics(context.Context) ([]string, error) { return nil, nil }

// behindError is a publisher's record not sent for a slow receiver, as
// a webhook's lanes give it back (lanes.Error with Waited).
type behindError struct{ behind bool }

func (e behindError) Error() string { return "waiting: the receiver is slower than the events arrive" }
func (e behindError) Behind() bool  { return e.behind }

// TestFailedAsSlow: a record its publisher did not send because its
// receiver is slower than the events arrive is parked FAILED, for its
// poller, under the metric's reason Slow (which CdcRelayEventsParking
// leaves out), wrapped or not; any other refusal under its Kafka error's
// name.
func TestFailedAsSlow(t *testing.T) {
	l := &Ledger{Failures: nopStore{}}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{behindError{true}, Slow},
		{fmt.Errorf("send: %w", behindError{true}), Slow},
		{behindError{false}, "OTHER"},
		{errors.New("refused"), "OTHER"},
	} {
		as := l.FailedAs(tc.err)
		if as.cause != tc.want || as.held || as.reason != tc.err {
			t.Errorf("FailedAs(%v): cause %q, held %v, reason %v; want cause %q, not held, its own reason", tc.err, as.cause, as.held, as.reason, tc.want)
		}
		if IsBehind(tc.err) != (tc.want == Slow) {
			t.Errorf("IsBehind(%v) = %v", tc.err, IsBehind(tc.err))
		}
	}
}
