package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/cdc-relay/cdc-relay/relay"
	"github.com/cdc-relay/cdc-relay/status"
)

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintln(w, "ok")
}

func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	st := s.relay.Status()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if !st.Ready {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "not ready:", st.NotReady)
		return
	}
	fmt.Fprintln(w, "ready:", st.Role)
}

func (s *Server) status(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.relay.Status())
}

// pauseResult is the answer of /pause and /resume; Topic is set for
// ?topic=, Publisher for ?publisher= of a webhook publisher.
type pauseResult struct {
	Topic     string `json:"topic,omitempty"`
	Publisher string `json:"publisher,omitempty"`
	Paused    bool   `json:"paused"`
	// Changed is false when the relay (or the topic) already was so.
	Changed bool `json:"changed"`
}

func (s *Server) pause(w http.ResponseWriter, req *http.Request) {
	if req.URL.Query().Has("topic") {
		s.pauseTopic(w, req, true)
		return
	}
	if req.URL.Query().Has("publisher") {
		writeError(w, http.StatusBadRequest, errors.New("?publisher= names whose events of a topic to pause: add ?topic=; the whole relay's pause is every publisher's"))
		return
	}
	changed := s.relay.Pause()
	if changed {
		s.opts.Logger.Info("paused through the admin endpoint", "from", req.RemoteAddr)
	}
	writeJSON(w, http.StatusOK, pauseResult{Paused: true, Changed: changed})
}

func (s *Server) resume(w http.ResponseWriter, req *http.Request) {
	if req.URL.Query().Has("topic") {
		s.pauseTopic(w, req, false)
		return
	}
	if req.URL.Query().Has("publisher") {
		writeError(w, http.StatusBadRequest, errors.New("?publisher= names whose events of a topic to resume: add ?topic=; the whole relay's resume is every publisher's"))
		return
	}
	changed := s.relay.Resume()
	if changed {
		s.opts.Logger.Info("resumed through the admin endpoint", "from", req.RemoteAddr)
	}
	writeJSON(w, http.StatusOK, pauseResult{Paused: false, Changed: changed})
}

// pauseTopic pauses (or resumes) the topic of ?topic=: Kafka's events of
// it through the relay, which holds them in its session at once, or with
// ?publisher= a webhook publisher's, at once too.
func (s *Server) pauseTopic(w http.ResponseWriter, req *http.Request, pause bool) {
	topic := req.URL.Query().Get("topic")
	if topic == "" {
		writeError(w, http.StatusBadRequest, errors.New("topic is empty: name the topic, or leave ?topic= out to pause or resume the whole relay"))
		return
	}
	store, ok := s.publisherStore(w, req)
	if !ok {
		return
	}
	change, verb := s.relay.ResumeTopic, "resumed"
	if pause {
		change, verb = s.relay.PauseTopic, "paused"
	}
	res := pauseResult{Topic: topic, Paused: pause}
	log := s.opts.Logger.With("topic", topic)
	if store != nil {
		res.Publisher = store.Publisher()
		change = func(ctx context.Context, topic string) (bool, error) {
			return s.relay.ResumeTopicOf(ctx, res.Publisher, topic)
		}
		if pause {
			change = func(ctx context.Context, topic string) (bool, error) {
				return s.relay.PauseTopicOf(ctx, res.Publisher, topic)
			}
		}
		log = log.With("publisher", res.Publisher)
	}
	changed, err := change(req.Context(), topic)
	if err != nil {
		writeError(w, errorStatus(err), err)
		return
	}
	if changed {
		log.Info("topic "+verb+" through the admin endpoint", "from", req.RemoteAddr)
	}
	res.Changed = changed
	writeJSON(w, http.StatusOK, res)
}

// defaultFailedLimit is how many rows GET /failed returns without ?limit=;
// maxFailedLimit is the most one request may ask for, so that a request
// cannot make the relay read and encode the whole status table.
const (
	defaultFailedLimit = 100
	maxFailedLimit     = 1000
)

func (s *Server) failed(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = q.Get("status") // the CLI's --status
	}
	opts := status.ListOptions{Status: strings.ToUpper(state), Topic: q.Get("topic"), Limit: defaultFailedLimit}
	switch opts.Status {
	case "":
		opts.Status = status.Failed
	case status.Failed, status.Dead, status.Delivered, status.Waiting, status.Paused:
	default:
		writeError(w, http.StatusBadRequest, fmt.Errorf("state %q: want FAILED, DEAD, WAITING, PAUSED or DELIVERED", state))
		return
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(l, "-") {
			n, err = maxFailedLimit+1, nil // too large to read: over the maximum
		}
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, fmt.Errorf("limit %q: want a positive number", l))
			return
		}
		if n > maxFailedLimit {
			writeError(w, http.StatusBadRequest, fmt.Errorf("limit %s: at most %d rows a request; "+
				"narrow it with ?state= or ?topic=, or list them all with `cdc-relay failed list --limit 0`", l, maxFailedLimit))
			return
		}
		opts.Limit = n
	}
	store, ok := s.publisherStore(w, req)
	if !ok {
		return
	}
	list := s.relay.Failed
	if store != nil {
		list = store.List
	}
	rows, err := list(req.Context(), opts)
	if err != nil {
		writeError(w, errorStatus(err), err)
		return
	}
	if rows == nil {
		rows = []status.Row{}
	}
	writeJSON(w, http.StatusOK, rows)
}

// retryResult is the answer of POST /failed/{id}/retry.
type retryResult struct {
	ID int64 `json:"id"`
	// Was is the row's state before: FAILED or DEAD.
	Was string `json:"was"`
	// Topic is the corrected topic of ?topic=, which the event is now
	// delivered to; omitted without it.
	Topic string `json:"topic,omitempty"`
	// Released, with ?topic=, is how many WAITING events of its key in its
	// old topic the event released.
	Released int `json:"released,omitempty"`
	// Publisher is the webhook publisher of ?publisher=; omitted for
	// Kafka's.
	Publisher string `json:"publisher,omitempty"`
}

func (s *Server) retry(w http.ResponseWriter, req *http.Request) {
	id, err := strconv.ParseInt(req.PathValue("id"), 10, 64)
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("id %q: want the number `cdc-relay failed list` shows", req.PathValue("id")))
		return
	}
	topic := req.URL.Query().Get("topic")
	if req.URL.Query().Has("topic") && topic == "" {
		writeError(w, http.StatusBadRequest, errors.New("?topic= is empty: give the topic to deliver the event to"))
		return
	}
	store, ok := s.publisherStore(w, req)
	if !ok {
		return
	}
	retry, log, res := s.relay.Retry, s.opts.Logger, retryResult{ID: id, Topic: topic}
	if store != nil {
		publisher := store.Publisher()
		retry = func(ctx context.Context, opts status.RetryOptions) ([]status.Change, error) {
			return s.relay.RetryOf(ctx, publisher, opts)
		}
		res.Publisher, log = publisher, log.With("publisher", publisher)
	}
	changes, err := retry(req.Context(), status.RetryOptions{IDs: []int64{id}, Topic: topic})
	if err != nil {
		err = s.whose(req.Context(), store, id, err)
		writeError(w, errorStatus(err), err)
		return
	}
	if len(changes) != 1 {
		writeError(w, http.StatusNotFound, fmt.Errorf("id %d: %w", id, status.ErrNotFound))
		return
	}
	if topic != "" {
		log.Info("parked event made due to a corrected topic through the admin endpoint", "id", id, "was", changes[0].Was,
			"topic", topic, "released", changes[0].Released, "from", req.RemoteAddr)
	} else {
		log.Info("parked event made due through the admin endpoint", "id", id, "was", changes[0].Was, "from", req.RemoteAddr)
	}
	res.Was, res.Released = changes[0].Was, changes[0].Released
	writeJSON(w, http.StatusOK, res)
}

// errorStatus is the HTTP status for an error of the relay's status
// table.
func errorStatus(err error) int {
	switch {
	case errors.Is(err, status.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, status.ErrTopicRefused), errors.Is(err, status.ErrTopicKept), errors.Is(err, relay.ErrUnknownPublisher):
		return http.StatusBadRequest
	case errors.Is(err, status.ErrDelivered), errors.Is(err, status.ErrHeld), errors.Is(err, status.ErrTopicTaken):
		return http.StatusConflict
	case errors.Is(err, relay.ErrNotConnected):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// errorBody is the JSON of every error answer.
type errorBody struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, code int, err error) {
	writeJSON(w, code, errorBody{Error: err.Error()})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
