package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cdc-relay/cdc-relay/internal/fatal"
	"github.com/cdc-relay/cdc-relay/internal/pgconnect"
	"github.com/cdc-relay/cdc-relay/internal/pgerr"
	"github.com/cdc-relay/cdc-relay/internal/suggest"
	"github.com/cdc-relay/cdc-relay/metrics"
	"github.com/cdc-relay/cdc-relay/preflight"
	"github.com/cdc-relay/cdc-relay/relay/delivery"
	"github.com/cdc-relay/cdc-relay/relay/delivery/exactlyonce"
	"github.com/cdc-relay/cdc-relay/relay/keyorder"
	"github.com/cdc-relay/cdc-relay/relay/pgnotice"
	"github.com/cdc-relay/cdc-relay/replication"
	"github.com/cdc-relay/cdc-relay/report"
	"github.com/cdc-relay/cdc-relay/status"
)

// Relay is one relay: Run it, and meanwhile, from any goroutine, read its
// Status, pause and resume it, and serve its Metrics.
type Relay struct {
	cfg      Config
	log      *slog.Logger
	metrics  *metrics.Metrics
	pause    replication.PauseSwitch
	state    state
	count    delivery.Counters
	failures atomic.Pointer[status.Store] // once Run has connected
	// publisherFailures are the status stores of the publishers beside
	// Kafka, by name, once Run has connected (see Failures).
	publisherFailures atomic.Pointer[map[string]*status.Store]
	// writeBack is the write-back of the running relay, for the metrics;
	// nil when no table writes back.
	writeBack atomic.Pointer[delivery.TableOutcomes]
	// order is the running session's held keys and paused topics; nil
	// while no session streams.
	order atomic.Pointer[keyorder.Order]
	// publisherOrders are the running session's key orders of the
	// publishers beside Kafka, by name; nil while no session streams.
	publisherOrders atomic.Pointer[map[string]*keyorder.Order]
	// pgOutages says once that PostgreSQL cannot be reached, and once
	// that it is back.
	pgOutages *pgnotice.Outages
	// history is the last hour of the relay's counters (see History).
	history *report.History
}

// New returns a relay for cfg, or the error that makes cfg unusable.
func New(cfg Config) (*Relay, error) {
	cfg = cfg.withDefaults()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.checkSlotLoss(); err != nil {
		return nil, err
	}
	if len(cfg.Tables) > 1 && cfg.Retention.Outbox > 0 {
		return nil, errors.New("outbox retention deletes the rows of one outbox table: with several tables, set it to 0 and keep your own cleanup")
	}
	if err := replication.ValidSlotName(cfg.Slot); err != nil {
		return nil, fmt.Errorf("%w: choose another --slot", err)
	}
	if _, err := pgxpool.ParseConfig(cfg.PostgresURL); err != nil {
		return nil, fmt.Errorf("parse PostgreSQL URL: %w", pgerr.Parse(err))
	}
	cfg.liveURL = pgconnect.NewLiveURL(cfg.PostgresURL, cfg.PostgresURLFile, cfg.Logger)
	r := &Relay{cfg: cfg, log: cfg.Logger, history: report.NewHistory(report.HistorySize)}
	r.pgOutages = pgnotice.NewOutages(cfg.Logger, cfg.PostgresURL)
	r.metrics = metrics.New(cfg.Build, r.snapshot)
	r.metrics.Sources(cfg.routedTables(), cfg.messagePrefixes())
	for _, p := range cfg.Publishers {
		r.metrics.Webhook(p.Name) // its series from the start, on a standby too
	}
	return r, nil
}

// Run runs a relay for cfg until ctx is done; see Relay.Run.
func Run(ctx context.Context, cfg Config) error {
	r, err := New(cfg)
	if err != nil {
		return err
	}
	return r.Run(ctx)
}

// Metrics returns the relay's metrics; serve Metrics().Registry.
func (r *Relay) Metrics() *metrics.Metrics { return r.metrics }

// Pause pauses the relay: after the transaction being read, it reads
// nothing more from the slot (the WAL keeps the events; PostgreSQL is still
// told what was delivered), and the poller stops re-delivering parked
// events. It reports whether the relay was running. A pause lasts until
// Resume, across reconnects, but not across a restart of the process.
func (r *Relay) Pause() bool {
	if !r.pause.Pause() {
		return false
	}
	r.log.Info("paused: reading the slot stops after the current transaction")
	return true
}

// Resume undoes Pause; it reports whether the relay was paused.
func (r *Relay) Resume() bool {
	if !r.pause.Resume() {
		return false
	}
	r.log.Info("resumed")
	return true
}

// PauseTopic pauses topic, kept in the pause table for the relay's slot:
// from the next event on, the stream parks the topic's events in the
// status table as PAUSED (no attempt counted) instead of producing them,
// and the poller leaves them, while the rest of the stream goes on. It
// lasts across restarts and a standby's takeover; a relay that leads
// reads the pause table every status interval, so a pause written by
// another process takes effect within that. It works on a standby relay
// too. It reports whether the topic was not paused.
func (r *Relay) PauseTopic(ctx context.Context, topic string) (bool, error) {
	s, err := r.pauses(topic)
	if err != nil {
		return false, err
	}
	changed, err := s.PauseTopic(ctx, topic)
	if err != nil {
		return false, fmt.Errorf("pause topic %q: %w", topic, err)
	}
	if o := r.order.Load(); o != nil {
		o.PauseTopic(topic)
	}
	if changed {
		r.log.Info("topic paused: its events are held in the status table", "topic", topic)
	}
	return changed, nil
}

// ResumeTopic undoes PauseTopic: the topic's held events are delivered
// by the poller in commit order, before any newer event of their keys
// (with Config.Ordering key). It reports whether the topic was paused.
func (r *Relay) ResumeTopic(ctx context.Context, topic string) (bool, error) {
	s, err := r.pauses(topic)
	if err != nil {
		return false, err
	}
	changed, err := s.ResumeTopic(ctx, topic)
	if err != nil {
		return false, fmt.Errorf("resume topic %q: %w", topic, err)
	}
	if o := r.order.Load(); o != nil {
		o.ResumeTopic(topic)
	}
	if changed {
		r.log.Info("topic resumed: its held events are delivered in commit order", "topic", topic)
	}
	return changed, nil
}

// PauseTopicOf is PauseTopic for one publisher's events of topic:
// Kafka's (PauseTopic), or a webhook publisher's, paused in the pause
// table and held in that publisher's streaming session at once, not at
// its next read of the pause table. It reports whether the topic was not
// paused for the publisher.
func (r *Relay) PauseTopicOf(ctx context.Context, publisher, topic string) (bool, error) {
	return r.changePauseOf(ctx, publisher, topic, true)
}

// ResumeTopicOf undoes PauseTopicOf: the publisher's held events of topic
// are sent by its poller in commit order, and its new ones flow at once.
// It reports whether the topic was paused for the publisher.
func (r *Relay) ResumeTopicOf(ctx context.Context, publisher, topic string) (bool, error) {
	return r.changePauseOf(ctx, publisher, topic, false)
}

// changePauseOf pauses (or resumes) publisher's topic: see PauseTopicOf.
func (r *Relay) changePauseOf(ctx context.Context, publisher, topic string, pause bool) (bool, error) {
	if publisher == status.KafkaPublisher {
		if pause {
			return r.PauseTopic(ctx, topic)
		}
		return r.ResumeTopic(ctx, topic)
	}
	if topic == "" {
		return false, errors.New("name the topic to pause or resume")
	}
	s, err := r.Failures(publisher)
	if err != nil {
		return false, err
	}
	change, verb := s.ResumeTopic, "resume"
	if pause {
		change, verb = s.PauseTopic, "pause"
	}
	changed, err := change(ctx, topic)
	if err != nil {
		return false, fmt.Errorf("%s topic %q for publisher %s: %w", verb, topic, publisher, err)
	}
	if o := r.publisherOrder(publisher); pause {
		o.PauseTopic(topic) // nil while no session streams: the next reads the pause table
	} else {
		o.ResumeTopic(topic)
	}
	return changed, nil
}

// pauses returns the store that keeps the topic pauses, once Run has
// connected.
func (r *Relay) pauses(topic string) (*status.Store, error) {
	if topic == "" {
		return nil, errors.New("name the topic to pause or resume")
	}
	s := r.failures.Load()
	if s == nil {
		return nil, ErrNotConnected
	}
	return s, nil
}

// PausedTopics returns the topics the leading relay holds paused, sorted;
// nil while this relay does not stream.
func (r *Relay) PausedTopics() []string {
	topics := r.order.Load().PausedTopics()
	slices.Sort(topics)
	return topics
}

// ErrNotConnected is returned by the methods that need the database before
// Run has connected to it.
var ErrNotConnected = errors.New("the relay is not connected to PostgreSQL yet")

// ErrUnknownPublisher is wrapped by the error of Failures for a name that
// is not one of the relay's publishers. Test for it with errors.Is.
var ErrUnknownPublisher = errors.New("not one of the relay's publishers")

// Failures returns the status store of the relay's publisher named
// publisher: Kafka's (status.KafkaPublisher), or one of Config.Publishers',
// each reading and writing its own parked events and paused topics only
// (status.Publisher). The admin endpoints act on a webhook publisher's
// through it; Kafka's are acted on through Failed, Retry, PauseTopic and
// ResumeTopic, which tell the streaming session too. A webhook
// publisher's pause or resume written through its store takes effect
// within the status interval, when the session reads its paused topics
// again. A name that is not one of the relay's publishers is an error
// wrapping ErrUnknownPublisher that names them; before Run has connected,
// the error is ErrNotConnected.
func (r *Relay) Failures(publisher string) (*status.Store, error) {
	names := []string{status.KafkaPublisher}
	for _, p := range r.cfg.Publishers {
		names = append(names, p.Name)
	}
	if !slices.Contains(names, publisher) {
		msg := strings.Join(names, ", ")
		if near := suggest.Closest(strings.ToLower(publisher), names); near != "" {
			msg = fmt.Sprintf("did you mean %q? (%s)", near, msg)
		}
		return nil, fmt.Errorf("publisher %q: %w: %s", publisher, ErrUnknownPublisher, msg)
	}
	kafka := r.failures.Load()
	if kafka == nil {
		return nil, ErrNotConnected
	}
	if publisher == status.KafkaPublisher {
		return kafka, nil
	}
	if m := r.publisherFailures.Load(); m != nil && (*m)[publisher] != nil {
		return (*m)[publisher], nil
	}
	return nil, ErrNotConnected
}

// Failed lists parked events (see status.Store.List).
func (r *Relay) Failed(ctx context.Context, opts status.ListOptions) ([]status.Row, error) {
	s := r.failures.Load()
	if s == nil {
		return nil, ErrNotConnected
	}
	return s.List(ctx, opts)
}

// Retry makes parked events due at once (see status.Store.Retry). A new
// topic (opts.Topic) must pass the check the poller applies to the row's
// topic (Config.CheckCorrectedTopic: a legal name that the allowed topics
// of the row's source allow), else the error is status.ErrTopicRefused. The
// running relay holds the row's key in its new topic before the change
// commits: no later event of the key in that topic goes ahead of the row.
func (r *Relay) Retry(ctx context.Context, opts status.RetryOptions) ([]status.Change, error) {
	s := r.failures.Load()
	if s == nil {
		return nil, ErrNotConnected
	}
	if opts.Topic != "" {
		if err := r.cfg.CheckCorrectedTopic(ctx, s, opts); err != nil {
			return nil, err
		}
		opts.Hold = r.holdCorrected
	}
	return s.Retry(ctx, opts)
}

// CheckCorrectedTopic checks the new topic of a retry (opts.Topic, with
// one id) as the poller will check the row's topic: against the allowed
// topics of the row's source (SourceTopicCheck, by its source_table, which
// never changes). A refusal wraps status.ErrTopicRefused. Without a new
// topic, or for an id not in s's table (Retry reports it), it returns nil.
func (c Config) CheckCorrectedTopic(ctx context.Context, s *status.Store, opts status.RetryOptions) error {
	if opts.Topic == "" {
		return nil
	}
	check, err := c.SourceTopicCheck()
	if err != nil {
		return err
	}
	var source string
	if len(opts.IDs) == 1 {
		row, err := s.Get(ctx, opts.IDs[0])
		if errors.Is(err, status.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		source = row.SourceTable
	}
	if err := check(source, opts.Topic); err != nil {
		return fmt.Errorf("%w: %w", status.ErrTopicRefused, err)
	}
	return nil
}

// holdCorrected holds k, the new topic and key of a row whose topic is
// being corrected, in the streaming session's order; a relay that does not
// stream holds nothing (its next session reads the held keys).
func (r *Relay) holdCorrected(k status.Key) func() {
	return r.order.Load().HoldRow(k)
}

// RetryOf makes parked events of publisher due at once, as Retry does
// Kafka's: Kafka's (status.KafkaPublisher) through Retry, a webhook
// publisher's through its store (Failures). A new topic (opts.Topic) is
// checked as Retry checks it, and the running relay holds the row's key
// in its new topic, in that publisher's key order, before the change
// commits. A name that is not one of the relay's publishers is an error
// wrapping ErrUnknownPublisher; before Run has connected, the error is
// ErrNotConnected.
func (r *Relay) RetryOf(ctx context.Context, publisher string, opts status.RetryOptions) ([]status.Change, error) {
	s, err := r.Failures(publisher)
	if err != nil {
		return nil, err
	}
	if publisher == status.KafkaPublisher {
		return r.Retry(ctx, opts)
	}
	if opts.Topic != "" {
		if err := r.cfg.CheckCorrectedTopic(ctx, s, opts); err != nil {
			return nil, err
		}
		opts.Hold = func(k status.Key) func() { return r.publisherOrder(publisher).HoldRow(k) }
	}
	return s.Retry(ctx, opts)
}

// publisherOrder is the streaming session's key order of publisher, a
// webhook's; nil while no session streams (HoldRow holds nothing then:
// the next session reads the held keys).
func (r *Relay) publisherOrder(publisher string) *keyorder.Order {
	if m := r.publisherOrders.Load(); m != nil {
		return (*m)[publisher]
	}
	return nil
}

// Run runs the relay until ctx is done (a clean stop: the current
// transaction is finished, in-flight events are acked, the position is
// confirmed, and Run returns nil) or a fatal error. A lost connection to
// PostgreSQL (a restart, a dropped replication connection) is not fatal:
// the relay reconnects with backoff and resumes from the slot's confirmed
// position, retaking leadership first. A gap in the WAL the relay read (a
// [SlotGapError]) is fatal, unless Config.OnSlotLoss is SlotLossRecover:
// then Run repairs it and the next session starts at once. Run once.
func (r *Relay) Run(ctx context.Context) error {
	defer r.state.setRole(report.RoleStopped)
	preflight.WarnMessagesNotRecovered(r.log, r.cfg.onSlotLoss() == SlotLossRecover, r.cfg.Messages)
	rn, err := r.newRunner(ctx)
	if err != nil || rn == nil {
		return err // nil: stopped while starting
	}
	defer rn.close()
	backoff := time.Second
	for {
		began := time.Now()
		err := rn.session(ctx)
		var gap *SlotGapError
		switch {
		case ctx.Err() != nil:
			r.stopped(err)
			return nil
		case errors.As(err, &gap) && r.cfg.OnSlotLoss == SlotLossRecover:
			if err = rn.recoverSlot(ctx, gap); err == nil {
				continue // repaired: the next session streams from the slot
			}
			err = rn.missingPrivilege(ctx, err)
			r.state.sessionFailed(err)
			if fatal.Is(err) {
				return err
			}
		case fatal.Is(err):
			r.state.sessionFailed(err)
			return err
		case errors.Is(err, exactlyonce.ErrRedo):
			// A Kafka transaction aborted: what was learnt from it is
			// in exactlyonce.State, and the next session goes on at once.
			continue
		case err != nil:
			if stuck := rn.publicationUndecodable(ctx, err); stuck != nil {
				r.state.sessionFailed(stuck)
				return stuck
			}
			err = rn.missingPrivilege(ctx, err)
			if hint := pgerr.ReadOnlyHint(err); hint != "" {
				err = fmt.Errorf("%w%s", err, hint) // which setting makes the session read-only
			}
			r.state.sessionFailed(err)
		}
		if time.Since(began) > time.Minute {
			backoff = time.Second
		}
		if pe := (pgnotice.PrivilegeError{}); errors.As(err, &pe) {
			rn.privileges.Say(pe, r.cfg.Slot, backoff)
		} else {
			r.log.Log(ctx, r.pgOutages.ReconnectLevel(err), "replication session ended; reconnecting", "err", err, "in", backoff)
		}
		rn.reconnect = r.pgOutages.ReconnectAfter(rn.reconnect, err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// stopped logs the end of Run after ctx ended, with err, the last
// session's. Nothing is lost either way: what was not confirmed is sent
// again after a restart.
func (r *Relay) stopped(err error) {
	if errors.Is(err, replication.ErrStopTimeout) {
		r.log.Warn("stopped before every in-flight event was acked; they will be sent again after a restart")
	} else if err != nil && !errors.Is(err, context.Canceled) {
		r.log.Warn("stopped with an error", "err", err)
	}
	r.log.Info("relay stopped", "events", r.count.Events.Load(), "failed", r.count.Failed.Load())
}

// maxBackoff bounds the wait between sessions. After a failover, the
// promoted server is found by the first attempt after the promotion, up to
// maxBackoff later; a bound of 10 s (not 30 s) keeps the first event
// committed after the promotion within 30 s, session start included, for
// one connection attempt per server every 10 s while PostgreSQL is down.
const maxBackoff = 10 * time.Second
