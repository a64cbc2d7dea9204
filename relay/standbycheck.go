package relay

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/tick"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/preflight"
	"github.com/cdc-relay/cdc-relay/replication"
)

// How often a standby runs the leader's start checks: every
// standbyRecheck while they pass, every standbyRecheckFailing while one
// fails, so that a fixed cause makes it ready soon after.
const (
	standbyRecheck        = 30 * time.Second
	standbyRecheckFailing = 5 * time.Second
	standbyCheckTimeout   = 10 * time.Second
)

// checkWhileStandingBy runs the start checks a leader depends on (see
// standbyProblem) at once and then again while this relay stands by,
// recording the first failing one in its state, which makes it not ready,
// and logging each new problem once. The returned stop ends the checks,
// waits for them, and forgets the problem: a leader reports for itself.
func (r *runner) checkWhileStandingBy(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var last string
		var lastAt time.Time
		tick.Every(ctx, standbyRecheckFailing, func(ctx context.Context) bool {
			if last == "" && !lastAt.IsZero() && time.Since(lastAt) < standbyRecheck {
				return true
			}
			cctx, cancel := context.WithTimeout(ctx, standbyCheckTimeout)
			problem := r.standbyProblem(cctx)
			cancel()
			if ctx.Err() != nil {
				return false
			}
			r.logStandbyCheck(last, problem)
			r.state.setStandbyProblem(problem)
			last, lastAt = problem, time.Now()
			return true
		}, tick.Now(), tick.FromEnd())
	}()
	return func() {
		cancel()
		<-done
		r.state.setStandbyProblem("")
	}
}

// logStandbyCheck logs a standby check's outcome when it changed: each
// new problem once, at warn, and the checks passing again after one.
func (r *runner) logStandbyCheck(last, problem string) {
	switch {
	case problem == last:
	case problem != "":
		r.log.Warn("this standby could not take over: it is not ready until this is fixed", "slot", r.cfg.Slot, "problem", problem)
	default:
		r.log.Info("this standby's start checks pass again: it is ready to take over", "slot", r.cfg.Slot)
	}
}

// standbyProblem runs, reading only, the checks a leader's start depends
// on and returns the first that fails, or "": each table as migrate
// prepared it with the publication (migrations.Check, as at start), the
// role's privileges on the relay's tables, and a replication connection
// (the REPLICATION attribute, pg_hba.conf), opened and closed at once: it
// takes no slot and starts nothing. Kafka is checked beside it, as for
// every relay (watchHealth).
func (r *runner) standbyProblem(ctx context.Context) string {
	for _, m := range r.cfg.checkedMigrations() {
		if err := migrations.Check(ctx, r.pool, m); err != nil {
			return err.Error()
		}
	}
	if err := checkMessagesServer(ctx, r.pool, r.cfg); err != nil {
		return err.Error()
	}
	problems, err := preflight.CheckPrivileges(ctx, r.pool, relayPrivileges(r.cfg))
	switch {
	case err != nil:
		return err.Error()
	case len(problems) > 0:
		msgs := make([]string, len(problems))
		for i, p := range problems {
			msgs[i] = p.String()
		}
		return strings.Join(msgs, "; ")
	}
	repl, err := replication.Connect(ctx, r.cfg.postgresURL(), "cdc-relay standby check", r.cfg.ReplicationTimeout)
	if err != nil {
		return err.Error()
	}
	_ = repl.Close(context.Background())
	return ""
}

// relayPrivileges are the privileges every relay's role needs on the
// relay's own tables, whatever its options: writing the status table (and
// numbering its rows) and the checkpoint table, reading the table of
// paused topics.
func relayPrivileges(cfg Config) []preflight.Privilege {
	m := cfg.Migrations(0)
	return []preflight.Privilege{
		{Table: pgx.Identifier{cfg.StatusSchema, cfg.StatusTable}.Sanitize(), What: "the status table", Need: []string{"SELECT", "INSERT", "UPDATE"}},
		{Table: pgx.Identifier{cfg.StatusSchema, cfg.StatusTable}.Sanitize(), What: "the sequence of the status table's id, which parking an event takes a number from",
			SerialColumn: "id", Need: []string{"USAGE"}},
		{Table: pgx.Identifier{cfg.CheckpointSchema, cfg.CheckpointTable}.Sanitize(), What: "the checkpoint table", Need: []string{"SELECT", "INSERT", "UPDATE"}},
		{Table: migrations.PauseTableName(m), What: "the table of paused topics", Need: []string{"SELECT"}},
	}
}

// setStandbyProblem records why a standby could not take over now; ""
// when its checks pass, or it does not stand by.
func (s *state) setStandbyProblem(problem string) {
	s.mu.Lock()
	s.standbyProblem = problem
	s.mu.Unlock()
}
