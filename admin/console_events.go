package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cdc-relay/cdc-relay/status"
)

// This file is the console's parked events: the list with its filters,
// an event's page, and the actions on it (retry, retry to another topic,
// skip, purge), each confirmed first on a page that says how many events
// it releases.

// eventFilter is the list's filters, from its query.
type eventFilter struct {
	Publisher, Topic, State, Key, From, To string
	from, to                               time.Time
}

// consoleListLimit is how many of the newest rows of a state and topic
// the list reads before it filters by key and time; it shows at most
// consoleShown of them.
const (
	consoleListLimit = maxFailedLimit
	consoleShown     = defaultFailedLimit
)

// eventsData is the list page's.
type eventsData struct {
	F      eventFilter
	States []string
	Rows   []status.Row
	// Cut says more rows matched than are shown; Read is how many rows
	// the filters by key and time looked at.
	Cut  bool
	Read int
	Err  string
}

// parseFilter reads the list's query.
func parseFilter(q url.Values) (eventFilter, error) {
	f := eventFilter{Publisher: q.Get("publisher"), Topic: q.Get("topic"), State: strings.ToUpper(q.Get("state")),
		Key: q.Get("key"), From: strings.TrimSpace(q.Get("from")), To: strings.TrimSpace(q.Get("to"))}
	if f.Publisher == "" {
		f.Publisher = status.KafkaPublisher
	}
	if !q.Has("state") {
		f.State = status.Failed
	}
	switch f.State {
	case "ANY", "", status.Failed, status.Dead, status.Waiting, status.Paused, status.Delivered:
	default:
		return f, fmt.Errorf("state %q: want FAILED, DEAD, WAITING, PAUSED, DELIVERED or any", f.State)
	}
	for _, t := range []struct {
		in  string
		out *time.Time
	}{{f.From, &f.from}, {f.To, &f.to}} {
		if t.in == "" {
			continue
		}
		var err error
		// In UTC unless the time says otherwise.
		for _, l := range []string{time.RFC3339, "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02T15:04", "2006-01-02"} {
			if *t.out, err = time.ParseInLocation(l, t.in, time.UTC); err == nil {
				break
			}
		}
		if err != nil {
			return f, fmt.Errorf("time %q: write it as 2006-01-02 15:04 (UTC) or RFC 3339", t.in)
		}
	}
	return f, nil
}

// keep reports whether a row passes the filters the store cannot apply:
// its key, and when it was parked (created_at).
func (f eventFilter) keep(r status.Row) bool {
	return (f.Key == "" || recordText(r.Key) == f.Key) &&
		(f.from.IsZero() || !r.CreatedAt.Before(f.from)) && (f.to.IsZero() || r.CreatedAt.Before(f.to))
}

func (c *console) events(w http.ResponseWriter, req *http.Request) {
	d := eventsData{States: []string{status.Failed, status.Dead, status.Waiting, status.Paused, status.Delivered, "ANY"}}
	f, err := parseFilter(req.URL.Query())
	d.F = f
	if err != nil {
		d.Err = err.Error()
		c.render(w, req, http.StatusBadRequest, "events", page{Title: "Parked events", Nav: "events", Data: d})
		return
	}
	opts := status.ListOptions{Status: f.State, Topic: f.Topic, Limit: consoleListLimit}
	if opts.Status == "ANY" {
		opts.Status = ""
	}
	list := c.s.relay.Failed
	if f.Publisher != status.KafkaPublisher {
		store, err := c.store(f.Publisher)
		if err != nil {
			d.Err = err.Error()
			c.render(w, req, errorStatus(err), "events", page{Title: "Parked events", Nav: "events", Data: d})
			return
		}
		list = store.List
	}
	rows, err := list(req.Context(), opts)
	if err != nil {
		d.Err = err.Error()
		c.render(w, req, errorStatus(err), "events", page{Title: "Parked events", Nav: "events", Data: d})
		return
	}
	d.Read = len(rows)
	for _, r := range rows {
		if !f.keep(r) {
			continue
		}
		if len(d.Rows) == consoleShown {
			d.Cut = true
			break
		}
		d.Rows = append(d.Rows, r)
	}
	c.render(w, req, http.StatusOK, "events", page{Title: "Parked events", Nav: "events", Data: d})
}

// store is the status store of a publisher's events (Kafka's included).
func (c *console) store(publisher string) (*status.Store, error) {
	if err := status.ValidPublisher(publisher); err != nil {
		return nil, err
	}
	return c.s.relay.Failures(publisher)
}

// eventData is an event's page, and its confirmation page's.
type eventData struct {
	Publisher string
	Row       status.Row
	// Value is the record's value as text, indented when it is JSON.
	Value string
	// Actions are those the event's state allows.
	CanRetry, CanSkip bool
	// Action, Topic and Releases are the confirmation's: what is to be
	// done, the corrected topic, how many events it releases.
	Action, Topic string
	Releases      int
}

// loadEvent reads the event of the request's {id} and ?publisher=, or
// answers why not and returns false.
func (c *console) loadEvent(w http.ResponseWriter, req *http.Request, publisher string) (eventData, *status.Store, bool) {
	back := message{Back: "/ui/events", BackText: "Parked events", Error: true}
	id, err := strconv.ParseInt(req.PathValue("id"), 10, 64)
	if err != nil {
		back.Heading, back.Text = "No such event", fmt.Sprintf("id %q: want the number the list shows", req.PathValue("id"))
		c.say(w, req, http.StatusBadRequest, back)
		return eventData{}, nil, false
	}
	if publisher == "" {
		publisher = status.KafkaPublisher
	}
	store, err := c.store(publisher)
	var row status.Row
	if err == nil {
		row, err = store.Get(req.Context(), id)
	}
	if err != nil {
		back.Heading, back.Text = fmt.Sprintf("Event %d", id), c.s.whose(req.Context(), nilIfKafka(store), id, err).Error()
		c.say(w, req, errorStatus(err), back)
		return eventData{}, nil, false
	}
	d := eventData{Publisher: publisher, Row: row, Value: indentJSON(row.Value)}
	d.CanRetry = (row.Status == status.Failed || row.Status == status.Dead) && row.Skipped.IsZero()
	d.CanSkip = d.CanRetry
	return d, store, true
}

// nilIfKafka is store, or nil for Kafka's, as Server.whose takes it.
func nilIfKafka(store *status.Store) *status.Store {
	if store == nil || store.Publisher() == status.KafkaPublisher {
		return nil
	}
	return store
}

// indentJSON is a record's value as text, indented when it is JSON.
func indentJSON(b []byte) string {
	var out bytes.Buffer
	if json.Valid(b) && json.Indent(&out, b, "", "  ") == nil {
		return out.String()
	}
	return recordText(b)
}

func (c *console) event(w http.ResponseWriter, req *http.Request) {
	d, _, ok := c.loadEvent(w, req, req.URL.Query().Get("publisher"))
	if !ok {
		return
	}
	c.render(w, req, http.StatusOK, "event", page{Title: fmt.Sprintf("Event %d", d.Row.ID), Nav: "events", Data: d})
}

// actionName is the name of an action on a parked event, by its path; ""
// for none.
func actionName(action string) string {
	switch action {
	case "retry":
		return "Retry"
	case "retry-topic":
		return "Retry to another topic"
	case "skip":
		return "Skip"
	case "purge":
		return "Purge"
	}
	return ""
}

// confirm is the page that asks to confirm an action on an event, and
// says how many events it releases.
func (c *console) confirm(w http.ResponseWriter, req *http.Request) {
	d, store, ok := c.loadEvent(w, req, req.URL.Query().Get("publisher"))
	if !ok {
		return
	}
	d.Action, d.Topic = req.URL.Query().Get("action"), strings.TrimSpace(req.URL.Query().Get("topic"))
	back := message{Back: fmt.Sprintf("/ui/events/%d?publisher=%s", d.Row.ID, url.QueryEscape(d.Publisher)), BackText: "The event", Error: true}
	switch {
	case actionName(d.Action) == "":
		back.Heading, back.Text = "No such action", "Choose retry, retry to another topic, skip or purge on the event's page."
		c.say(w, req, http.StatusBadRequest, back)
		return
	case d.Action == "retry-topic" && d.Topic == "":
		back.Heading, back.Text = "No topic", "Name the topic to deliver the event to."
		c.say(w, req, http.StatusBadRequest, back)
		return
	}
	n, err := store.WouldRelease(req.Context(), []int64{d.Row.ID})
	if err != nil {
		back.Heading, back.Text = "Cannot count the events it releases", err.Error()
		c.say(w, req, errorStatus(err), back)
		return
	}
	d.Releases = n[d.Row.ID]
	c.render(w, req, http.StatusOK, "confirm", page{Title: actionName(d.Action), Nav: "events", Data: d})
}

// act is POST /ui/events/{id}/{action}, from the confirmation page: it
// does what `cdc-relay failed retry|skip|purge` does, through the same
// calls, and says what changed.
func (c *console) act(w http.ResponseWriter, req *http.Request) {
	action := req.PathValue("action")
	if actionName(action) == "" {
		http.NotFound(w, req)
		return
	}
	publisher := req.PostFormValue("publisher")
	d, store, ok := c.loadEvent(w, req, publisher)
	if !ok {
		return
	}
	id, topic := d.Row.ID, strings.TrimSpace(req.PostFormValue("topic"))
	back := message{Back: fmt.Sprintf("/ui/events/%d?publisher=%s", id, url.QueryEscape(d.Publisher)), BackText: "The event"}
	changes, err := c.do(req.Context(), d.Publisher, store, action, id, topic)
	if err == nil && len(changes) != 1 {
		err = fmt.Errorf("id %d: %w", id, status.ErrNotFound)
	}
	if err != nil {
		back.Heading, back.Text, back.Error = actionName(action)+" refused", err.Error(), true
		c.say(w, req, errorStatus(err), back)
		return
	}
	ch := changes[0]
	c.log.Info("parked event "+action+" through the console", "id", id, "publisher", d.Publisher, "was", ch.Was,
		"topic", topic, "released", ch.Released, "from", req.RemoteAddr)
	back.Heading = fmt.Sprintf("Event %d: %s done", id, strings.ToLower(actionName(action)))
	switch action {
	case "retry":
		back.Text = fmt.Sprintf("It was %s; it is due now: the poller delivers it next.", ch.Was)
	case "retry-topic":
		back.Text = fmt.Sprintf("It was %s; it is due now, to topic %s. Released: %d.", ch.Was, topic, ch.Released)
	case "skip":
		back.Text = fmt.Sprintf("It was %s; it is DEAD now, skipped. Released: %d.", ch.Was, ch.Released)
	case "purge":
		back.Text = fmt.Sprintf("It was %s; it is deleted. Released: %d.", ch.Was, ch.Released)
		back.Back, back.BackText = "/ui/events", "Parked events"
	}
	c.say(w, req, http.StatusOK, back)
}

// do runs one action on one event of publisher, whose store is store.
func (c *console) do(ctx context.Context, publisher string, store *status.Store, action string, id int64, topic string) ([]status.Change, error) {
	switch action {
	case "retry":
		return c.s.relay.RetryOf(ctx, publisher, status.RetryOptions{IDs: []int64{id}})
	case "retry-topic":
		if topic == "" {
			return nil, errors.New("name the topic to deliver the event to")
		}
		return c.s.relay.RetryOf(ctx, publisher, status.RetryOptions{IDs: []int64{id}, Topic: topic})
	case "skip":
		return store.Skip(ctx, status.SkipOptions{IDs: []int64{id}})
	}
	return store.Purge(ctx, status.PurgeOptions{IDs: []int64{id}})
}
