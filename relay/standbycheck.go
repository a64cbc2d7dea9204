package relay

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cdc-relay/cdc-relay/internal/tick"
	"github.com/cdc-relay/cdc-relay/migrations"
	"github.com/cdc-relay/cdc-relay/preflight"
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
// on (preflight.CheckTakeover) and returns the first that fails, or "".
// Kafka is checked beside it, as for every relay (watchHealth).
func (r *runner) standbyProblem(ctx context.Context) string {
	return preflight.CheckTakeover(ctx, r.pool, preflight.Takeover{Migrations: r.cfg.checkedMigrations(), Messages: r.cfg.Messages,
		Privileges: relayPrivileges(r.cfg), ReplicationURL: r.cfg.postgresURL(), ReplicationTimeout: r.cfg.ReplicationTimeout})
}

// relayPrivileges are the privileges every relay's role needs on cfg's
// own tables (preflight.RelayPrivileges).
func relayPrivileges(cfg Config) []preflight.Privilege {
	status := pgx.Identifier{cfg.StatusSchema, cfg.StatusTable}.Sanitize()
	checkpoint := pgx.Identifier{cfg.CheckpointSchema, cfg.CheckpointTable}.Sanitize()
	return preflight.RelayPrivileges(status, checkpoint, migrations.PauseTableName(cfg.Migrations(0)))
}

// setStandbyProblem records why a standby could not take over now; ""
// when its checks pass, or it does not stand by.
func (s *state) setStandbyProblem(problem string) {
	s.mu.Lock()
	s.standbyProblem = problem
	s.mu.Unlock()
}
