package relay

import (
	"cmp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"

	"github.com/cdc-relay/cdc-relay/checkpoint"
	"github.com/cdc-relay/cdc-relay/metrics"
)

// Roles a relay reports (Status.Role).
const (
	RoleStarting = "starting" // connecting, or between sessions
	RoleStandby  = "standby"  // another relay leads the slot; this one waits
	RoleLeader   = "leader"   // this relay holds the slot's lock
	RoleStopped  = "stopped"  // Run returned
	RoleNone     = "none"     // read from the database: no relay answered
)

// Status is what a relay says of itself: GET /status, and
// `cdc-relay status`. Counts that are not known are -1.
type Status struct {
	// Version and Commit are the relay's build (buildinfo.Info): its
	// version, as "v0.5.0", and its full commit hash.
	Version string `json:"version,omitempty"`
	Commit  string `json:"commit,omitempty"`
	// Role is one of the Role constants; Streaming says the leader reads
	// the slot now.
	Role      string `json:"role"`
	Streaming bool   `json:"streaming"`
	// Ready is /readyz's answer, and NotReady says why not.
	Ready    bool   `json:"ready"`
	NotReady string `json:"not_ready,omitempty"`
	Paused   bool   `json:"paused"`
	// PausedTopics are the paused topics (PauseTopic), sorted: the
	// leader's, or on a standby those of the last database reading.
	PausedTopics []string `json:"paused_topics,omitempty"`
	Slot         string   `json:"slot"`
	// Table names the sources: the outbox tables, "schema.table, ...", then
	// the message sources, "message:prefix".
	Table string `json:"table"`
	// ConfirmedLSN is the position last confirmed to PostgreSQL.
	ConfirmedLSN string `json:"confirmed_lsn"`
	// LagBytes is the WAL written after the slot's confirmed position, and
	// WALRetainedBytes the WAL the slot keeps, as of DatabaseAt.
	LagBytes         int64 `json:"lag_bytes"`
	WALRetainedBytes int64 `json:"wal_retained_bytes"`
	// LagSeconds is the time since the commit of the oldest transaction
	// read whose events are not all delivered; 0 when nothing is in flight.
	LagSeconds     float64 `json:"lag_seconds"`
	InFlightEvents int64   `json:"in_flight_events"`
	InFlightBytes  int64   `json:"in_flight_bytes"`
	// EventsRead, EventsProduced and EventsParked count since the relay
	// started.
	EventsRead     uint64 `json:"events_read"`
	EventsProduced uint64 `json:"events_produced"`
	EventsParked   uint64 `json:"events_parked"`
	// Failed and Dead are the status table's FAILED and DEAD rows, as of
	// DatabaseAt.
	Failed     int64     `json:"failed"`
	Dead       int64     `json:"dead"`
	DatabaseAt time.Time `json:"database_at,omitzero"`
	// Topics are the topics with held events (the status table's FAILED,
	// DEAD, WAITING and PAUSED rows) as of DatabaseAt: at most
	// MaxHeldTopics, those with the most first; HeldTopics counts every
	// topic with held events.
	Topics     []TopicHeld `json:"topics"`
	HeldTopics int         `json:"held_topics"`
	// EventsBehind is what the relay still owes Kafka: the events in
	// flight (read and not yet acked) and the held events it delivers
	// itself (FAILED, WAITING and PAUSED, as of DatabaseAt; DEAD ones wait
	// for an operator); -1 until the status table is read. The WAL not
	// read yet is counted in bytes only (LagBytes): its events are not
	// known before they are decoded.
	EventsBehind int64 `json:"events_behind"`
	// PostgresError and KafkaError say why the last reachability check
	// failed; empty when it succeeded.
	PostgresError string `json:"postgres_error,omitempty"`
	KafkaError    string `json:"kafka_error,omitempty"`
	// StandbyProblem, on a standby, is the first of the leader's start
	// checks that fails (the tables, the privileges, the replication
	// connection): a takeover would fail on it. Empty when they pass.
	StandbyProblem string `json:"standby_problem,omitempty"`
	// LastError is the error that ended the last replication session, kept
	// until a session streams again.
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
	// PostgresVersion is the server's server_version_num; FailoverSlot says
	// the slot is a failover slot (PostgreSQL 17+: a standby with
	// sync_replication_slots = on keeps a copy, which its promotion
	// brings); SynchronizedStandbySlots is the server's
	// synchronized_standby_slots, empty when not set. As of DatabaseAt;
	// PostgresVersion is 0 until read.
	PostgresVersion          int    `json:"postgres_version_num,omitempty"`
	FailoverSlot             bool   `json:"failover_slot"`
	SynchronizedStandbySlots string `json:"synchronized_standby_slots,omitempty"`
	// OnSlotLoss is what the relay does on a gap in the WAL it read:
	// refuse, or recover; SlotRecoveries counts the gaps it repaired since
	// it started.
	OnSlotLoss     string `json:"on_slot_loss,omitempty"`
	SlotRecoveries uint64 `json:"slot_recoveries"`
	// Backfills are the backfills (`cdc-relay backfill`) running now, as
	// of DatabaseAt.
	Backfills []Backfill `json:"backfills,omitempty"`
}

// state is a relay's live state, written by Run's goroutines and read by
// Status and the metrics at any time.
type state struct {
	role      atomic.Pointer[string]
	streaming atomic.Bool
	tracker   atomic.Pointer[checkpoint.Tracker] // the session's, while one streams
	confirmed atomic.Uint64                      // by the leader's stream; 0 when it does not stream
	// slotRecoveries counts the gaps repaired (--on-slot-loss recover);
	// standbyWarned is set once the missing synchronized_standby_slots
	// was warned of.
	slotRecoveries atomic.Uint64
	standbyWarned  atomic.Bool
	// backfillsWarned is set once DatabaseStats.BackfillsProblem was
	// logged.
	backfillsWarned atomic.Bool
	// noFailoverSaid is set once the relay said that the server (before
	// PostgreSQL 17) has no failover slots: not again at each reconnect.
	noFailoverSaid atomic.Bool

	mu             sync.Mutex
	lastErr        string
	lastErrAt      time.Time
	pgErr          string // from the last reachability check
	kafkaErr       string
	checked        bool   // a reachability check ran
	standbyProblem string // the standby's checks' (checkWhileStandingBy)
	leaderProblem  string // the lock's holder does not stream (standbyWatch)
	db             DatabaseStats
	dbOK           bool // db holds a reading
}

func (s *state) setRole(role string) { s.role.Store(&role) }

// setLeaderProblem records why the slot's lock holder seems not to lead
// (standbyWatch): a standby is not ready while it lasts; "" when it does.
func (s *state) setLeaderProblem(problem string) {
	s.mu.Lock()
	s.leaderProblem = problem
	s.mu.Unlock()
}

func (s *state) getRole() string {
	if r := s.role.Load(); r != nil {
		return *r
	}
	return RoleStarting
}

// sessionFailed records the error that ended a session.
func (s *state) sessionFailed(err error) {
	s.mu.Lock()
	s.lastErr, s.lastErrAt = err.Error(), time.Now()
	s.mu.Unlock()
}

// clearError forgets the last session's error: streaming, or standing by,
// works again.
func (s *state) clearError() {
	s.mu.Lock()
	s.lastErr, s.lastErrAt = "", time.Time{}
	s.mu.Unlock()
}

// reachable records a reachability check; an empty string means reachable.
func (s *state) reachable(pgErr, kafkaErr string) {
	s.mu.Lock()
	s.pgErr, s.kafkaErr, s.checked = pgErr, kafkaErr, true
	s.mu.Unlock()
}

func (s *state) setDatabase(db DatabaseStats) {
	s.mu.Lock()
	s.db, s.dbOK = db, true
	s.mu.Unlock()
}

// Status reports the relay's state now.
func (r *Relay) Status() Status {
	st, _ := r.status()
	return st
}

// status is Status, and the confirmed position it reports as a number.
func (r *Relay) status() (Status, pglogrepl.LSN) {
	s := &r.state
	role, confirmed := s.getRole(), pglogrepl.LSN(s.confirmed.Load())
	leading := role == RoleLeader && confirmed != 0
	if !leading {
		confirmed = 0 // the slot's, once read
	}
	st := Status{
		Version: r.cfg.Build.Version, Commit: r.cfg.Build.Commit, Role: role, Streaming: s.streaming.Load(), Paused: r.pause.Paused(),
		PausedTopics: r.PausedTopics(),
		Slot:         r.cfg.Slot, Table: strings.Join(r.cfg.SourceNames(), ", "),
		LagBytes: -1, WALRetainedBytes: -1, Failed: -1, Dead: -1, EventsBehind: -1,
		EventsRead: uint64(r.count.Read.Load()), EventsProduced: uint64(r.count.Events.Load()), EventsParked: uint64(r.count.Failed.Load()),
		OnSlotLoss: string(r.cfg.onSlotLoss()), SlotRecoveries: s.slotRecoveries.Load(),
	}
	if t := s.tracker.Load(); t != nil {
		st.InFlightEvents, st.InFlightBytes = t.InFlight()
		if oldest, ok := t.OldestCommit(); ok && !oldest.IsZero() {
			st.LagSeconds = max(0, time.Since(oldest).Seconds())
		}
	}
	s.mu.Lock()
	st.LastError, st.LastErrorAt = s.lastErr, s.lastErrAt
	st.PostgresError, st.KafkaError = s.pgErr, s.kafkaErr
	if role == RoleStandby {
		st.StandbyProblem = cmp.Or(s.standbyProblem, s.leaderProblem)
	}
	checked := s.checked
	if s.dbOK {
		// Both ends of the lag from one reading: a fresh confirmed
		// position against a WAL end read seconds ago would understate it.
		db := s.db
		st.DatabaseAt, st.Failed, st.Dead, st.WALRetainedBytes = db.At, db.Failed, db.Dead, db.WALRetained()
		st.LagBytes = db.LagBytes()
		st.Topics, st.HeldTopics, st.Backfills = db.Topics, db.HeldTopics, db.Backfills
		if !leading {
			st.PausedTopics = db.PausedTopics
		}
		st.EventsBehind = st.InFlightEvents + db.Failed + db.Waiting + db.Paused
		st.PostgresVersion, st.FailoverSlot, st.SynchronizedStandbySlots = db.Failover.Version, db.Failover.Slot, db.Failover.StandbySlots
		if !leading && db.SlotExists {
			confirmed = db.Confirmed
		}
	}
	s.mu.Unlock()
	st.ConfirmedLSN = confirmed.String()
	st.NotReady = notReady(st, checked)
	st.Ready = st.NotReady == ""
	return st, confirmed
}

// notReady says why a relay in state st is not ready, or "" when it is: a
// leader that streams, or a standby whose start checks pass, while
// PostgreSQL and Kafka answer.
func notReady(st Status, checked bool) string {
	switch {
	case st.Role == RoleStopped:
		return "stopped"
	case !checked:
		return "starting: PostgreSQL and Kafka not checked yet"
	case st.PostgresError != "":
		return "PostgreSQL does not answer: " + st.PostgresError
	case st.KafkaError != "":
		return "Kafka does not answer: " + st.KafkaError
	case st.LastError != "":
		return "the last replication session failed: " + st.LastError
	case st.Role == RoleStandby && st.StandbyProblem != "":
		return "standby, and a takeover would fail: " + st.StandbyProblem
	case st.Role == RoleStandby:
		return ""
	case st.Role == RoleLeader && st.Streaming:
		return ""
	case st.Role == RoleLeader:
		return "leader, not streaming yet"
	}
	return "starting: not leading or standing by yet"
}

// snapshot is the metrics' view of Status.
func (r *Relay) snapshot() metrics.Snapshot {
	st, confirmed := r.status()
	snap := metrics.Snapshot{
		EventsRead: st.EventsRead, EventsProduced: st.EventsProduced,
		InFlightEvents: st.InFlightEvents, InFlightBytes: st.InFlightBytes,
		LagBytes: st.LagBytes, LagSeconds: st.LagSeconds,
		ConfirmedLSN: confirmed,
		Leader:       st.Role == RoleLeader, Paused: st.Paused, Ready: st.Ready,
		SlotWALRetained: st.WALRetainedBytes, Failed: st.Failed, Dead: st.Dead,
		EventsBehind: st.EventsBehind, Held: heldMetrics(st.Topics),
	}
	for _, b := range st.Backfills {
		snap.Backfills = append(snap.Backfills, metrics.Backfill{Table: b.Table, Rows: b.RowsPublished})
	}
	if wb := r.writeBack.Load(); wb != nil {
		s := wb.stats()
		snap.WriteBack = true
		snap.WriteBackRows, snap.WriteBackErrors, snap.WriteBackRefused, snap.WriteBackPending = s.Updated, s.Failures, s.Refused, int64(s.Pending)
	}
	return snap
}

// heldMetrics is the metrics' view of the topics with held events.
func heldMetrics(topics []TopicHeld) []metrics.HeldTopic {
	if len(topics) == 0 {
		return nil
	}
	held := make([]metrics.HeldTopic, len(topics))
	for i, t := range topics {
		held[i] = metrics.HeldTopic{Topic: t.Topic, Failed: t.Failed, Dead: t.Dead, Waiting: t.Waiting, Paused: t.Paused,
			OldestSeconds: t.OldestHeldSeconds}
	}
	return held
}
