package report

import (
	"time"

	"github.com/jackc/pglogrepl"

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
	// PublishersPaused are the topics paused for the publishers beside
	// Kafka (`cdc-relay pause --topic T --publisher P`), of the last
	// database reading.
	PublishersPaused []PublisherTopic `json:"publishers_paused,omitempty"`
	// PausedIn are the topics a team paused in its progress table (a
	// config file's progress:), of the last database reading; they are
	// among PausedTopics on the leader, and resumed there, not by
	// `cdc-relay resume`.
	PausedIn []TopicPausedIn `json:"paused_in,omitempty"`
	Slot     string          `json:"slot"`
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
	LagSeconds float64 `json:"lag_seconds"`
	// OldestUndeliveredSeconds is the age of the oldest event the relay
	// still owes Kafka: LagSeconds, or the oldest held event it delivers
	// itself (FAILED, WAITING, PAUSED; since it was parked or adopted) as
	// of DatabaseAt, aged since, whichever is older. Events not read yet
	// (a relay paused, or behind in the WAL) count only in LagBytes.
	OldestUndeliveredSeconds float64 `json:"oldest_undelivered_seconds"`
	InFlightEvents           int64   `json:"in_flight_events"`
	InFlightBytes            int64   `json:"in_flight_bytes"`
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

// WhyNotReady says why a relay in state st is not ready, or "" when it
// is: a leader that streams, or a standby whose start checks pass, while
// PostgreSQL and Kafka answer; checked says a reachability check of both
// ran. It is /readyz's answer (Status.Ready, Status.NotReady).
func WhyNotReady(st Status, checked bool) string {
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

// SetDatabase fills st's figures read from the database (db): as of
// db.At, the status table's held rows and topics, the retained WAL and the
// lag (both ends from this one reading: a fresh confirmed position against
// a WAL end read seconds ago would understate it), the running backfills
// and failover. EventsBehind adds the held events the relay delivers
// itself to st.InFlightEvents, and OldestUndeliveredSeconds their age to
// st.LagSeconds, which are to be set first. The paused topics
// and the confirmed position are the caller's to take: a leader knows
// fresher ones.
func (st *Status) SetDatabase(db DatabaseStats) {
	st.DatabaseAt, st.Failed, st.Dead, st.WALRetainedBytes = db.At, db.Failed, db.Dead, db.WALRetained()
	st.LagBytes = db.LagBytes()
	st.OldestUndeliveredSeconds = st.LagSeconds
	if db.OldestOwedSeconds > 0 {
		st.OldestUndeliveredSeconds = max(st.LagSeconds, db.OldestOwedSeconds+time.Since(db.At).Seconds())
	}
	st.Topics, st.HeldTopics, st.Backfills, st.PausedIn = db.Topics, db.HeldTopics, db.Backfills, db.PausedIn
	st.PublishersPaused = db.PublishersPaused
	st.EventsBehind = st.InFlightEvents + db.Failed + db.Waiting + db.Paused
	st.PostgresVersion, st.FailoverSlot, st.SynchronizedStandbySlots = db.Failover.Version, db.Failover.Slot, db.Failover.StandbySlots
}

// Metrics is the metrics' view of st, whose confirmed position is
// confirmed (the number st.ConfirmedLSN says). Write-back's figures are
// not in a Status: the relay adds them.
func (st Status) Metrics(confirmed pglogrepl.LSN) metrics.Snapshot {
	snap := metrics.Snapshot{
		EventsRead: st.EventsRead, EventsProduced: st.EventsProduced,
		InFlightEvents: st.InFlightEvents, InFlightBytes: st.InFlightBytes,
		LagBytes: st.LagBytes, LagSeconds: st.LagSeconds, OldestUndeliveredSeconds: max(st.LagSeconds, st.OldestUndeliveredSeconds),
		ConfirmedLSN: confirmed,
		Slot:         st.Slot, Leader: st.Role == RoleLeader, Paused: st.Paused, Ready: st.Ready,
		SlotWALRetained: st.WALRetainedBytes, Failed: st.Failed, Dead: st.Dead,
		EventsBehind: st.EventsBehind, Held: heldMetrics(st.Topics),
	}
	for _, b := range st.Backfills {
		snap.Backfills = append(snap.Backfills, metrics.Backfill{Table: b.Table, Rows: b.RowsPublished})
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
