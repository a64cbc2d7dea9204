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
	"github.com/cdc-relay/cdc-relay/report"
	"github.com/cdc-relay/cdc-relay/slot"
)

// state is a relay's live state, written by Run's goroutines and read by
// Status and the metrics at any time.
type state struct {
	role      atomic.Pointer[string]
	streaming atomic.Bool
	tracker   atomic.Pointer[checkpoint.Tracker] // the session's, while one streams
	confirmed atomic.Uint64                      // by the leader's stream; 0 when it does not stream
	// slotRecoveries counts the gaps repaired (--on-slot-loss recover).
	slotRecoveries atomic.Uint64
	// failoverSaid is what the sessions' starts said once per relay of
	// the slot as a failover slot.
	failoverSaid slot.FailoverSaid
	// backfillsWarned is set once report.DatabaseStats.BackfillsProblem was
	// logged.
	backfillsWarned atomic.Bool

	mu             sync.Mutex
	lastErr        string
	lastErrAt      time.Time
	pgErr          string // from the last reachability check
	kafkaErr       string
	checked        bool   // a reachability check ran
	standbyProblem string // the standby's checks' (checkWhileStandingBy)
	leaderProblem  string // the lock's holder does not stream (standbyWatch)
	db             report.DatabaseStats
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
	return report.RoleStarting
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

func (s *state) setDatabase(db report.DatabaseStats) {
	s.mu.Lock()
	s.db, s.dbOK = db, true
	s.mu.Unlock()
}

// Status reports the relay's state now.
func (r *Relay) Status() report.Status {
	st, _ := r.status()
	return st
}

// status is Status, and the confirmed position it reports as a number.
func (r *Relay) status() (report.Status, pglogrepl.LSN) {
	s := &r.state
	role, confirmed := s.getRole(), pglogrepl.LSN(s.confirmed.Load())
	leading := role == report.RoleLeader && confirmed != 0
	if !leading {
		confirmed = 0 // the slot's, once read
	}
	st := report.Status{
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
	if role == report.RoleStandby {
		st.StandbyProblem = cmp.Or(s.standbyProblem, s.leaderProblem)
	}
	checked := s.checked
	if s.dbOK {
		db := s.db
		st.SetDatabase(db)
		if time.Since(db.At) > staleStats {
			// Readings fail: the held events' age as last read, not
			// grown for ever by a reading that may be long gone.
			st.OldestUndeliveredSeconds = max(st.LagSeconds, db.OldestOwedSeconds)
		}
		if !leading {
			st.PausedTopics = db.PausedTopics
		}
		if !leading && db.SlotExists {
			confirmed = db.Confirmed
		}
	}
	s.mu.Unlock()
	st.ConfirmedLSN = confirmed.String()
	st.NotReady = report.WhyNotReady(st, checked)
	st.Ready = st.NotReady == ""
	return st, confirmed
}

// snapshot is the metrics' view of Status.
func (r *Relay) snapshot() metrics.Snapshot {
	st, confirmed := r.status()
	snap := st.Metrics(confirmed)
	if wb := r.writeBack.Load(); wb != nil {
		s := wb.Stats()
		snap.WriteBack = true
		snap.WriteBackRows, snap.WriteBackErrors, snap.WriteBackRefused, snap.WriteBackPending = s.Updated, s.Failures, s.Refused, int64(s.Pending)
		snap.WriteBackNotVisible = s.NotVisible
	}
	return snap
}

// ReportNames names what report.ReadDatabaseStats reads for c: its slot,
// its status table, the schema of its pause table and table of
// backfills, and the progress tables that pause topics.
func (c Config) ReportNames() report.Names {
	n := report.Names{Slot: c.Slot, StatusSchema: c.StatusSchema, StatusTable: c.StatusTable, CheckpointSchema: c.CheckpointSchema}
	for _, t := range c.Tables {
		for _, pp := range t.ProgressTables() {
			pt := pp.Table
			n.PausedIn = append(n.PausedIn, report.PausedIn{Table: pt.Schema + "." + pt.Name, Publisher: pp.Publisher, Select: pt.PausedTopics()})
		}
	}
	return n
}
