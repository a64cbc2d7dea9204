package pgnotice

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cdc-relay/cdc-relay/internal/outage"
	"github.com/cdc-relay/cdc-relay/internal/pgerr"
)

// pgOutageGrace is how long the health check's pings of PostgreSQL must
// fail, with no answer between, before the relay says PostgreSQL cannot be
// reached: a fast restart says nothing beyond its session's lines.
const pgOutageGrace = 5 * time.Second

// ErrShuttingDown ends a session that stopped for PostgreSQL's shutdown:
// a lost connection ([LostConnection]), which the outage lines speak for.
var ErrShuttingDown = errors.New("PostgreSQL is shutting down: the stream stopped so the shutdown can finish; the relay reconnects when it is back")

// Outages is the outage log of the servers a relay's connection string
// names, for the relay's life: one warning when an outage begins and one
// line when PostgreSQL answers again, however often the relay reconnects
// meanwhile. Safe for concurrent use.
type Outages struct {
	tracker *outage.Tracker
	said    atomic.Uint64 // the outages the log reported
}

// NewOutages returns the outage log of the servers url names, said on
// log; url must parse (else the lines name no server).
func NewOutages(log *slog.Logger, url string) *Outages {
	o := &Outages{}
	o.tracker = newPostgresOutages(log, url, nil, func() { o.said.Add(1) })
	return o
}

// newPostgresOutages returns the outage log of the servers url names: the
// health check's pings (every reachInterval, leader or standby, streaming
// or not) tell it, so an outage is one warning when it begins and one
// line when PostgreSQL answers again, however often the relay reconnects
// meanwhile. The servers are named as host:port, never with the URL's
// password. A login PostgreSQL refuses (authentication, a connection
// limit) is said as that ([pgerr.Refused]), not as an outage. now is the clock; nil is time.Now. lost, if set, is called
// after each lost line.
func newPostgresOutages(log *slog.Logger, url string, now func() time.Time, lost func()) *outage.Tracker {
	var hosts []string
	cfg, perr := pgconn.ParseConfig(url) // New checked it
	if perr == nil {
		hosts = pgerr.Hosts(cfg)
	}
	return outage.New(outage.Config{
		Grace: pgOutageGrace,
		Now:   now,
		Lost: func(o outage.Outage) {
			if ce := new(pgconn.ConnectError); perr == nil && errors.As(o.Err, &ce) {
				o.Err = pgerr.Connect(cfg, o.Err, "") // the server's address and user, with a hint
			}
			msg := "PostgreSQL cannot be reached; the relay reconnects when it is back. Check that the server is running, --postgres-url, pg_hba.conf and the network"
			if refused := pgerr.Refused(o.Err); refused != "" {
				msg = refused // it answered: the login, not the network
			}
			log.Warn(msg, "hosts", hosts, "err", o.Err, "failing_for", o.Lasted.Round(100*time.Millisecond))
			if lost != nil {
				lost()
			}
		},
		Back: func(o outage.Outage) {
			msg := "PostgreSQL is reachable again after "
			if pgerr.Refused(o.Err) != "" {
				msg = "PostgreSQL accepts the relay's connections again after "
			}
			log.Info(msg+o.Lasted.Round(100*time.Millisecond).String(), "hosts", hosts)
		},
	})
}

// Pinged tells the outage log how the health check's ping of PostgreSQL
// went: err, or nil for an answer. A ping cut short by ctx's end tells
// nothing.
func (o *Outages) Pinged(ctx context.Context, err error) {
	switch {
	case ctx.Err() != nil:
	case err != nil:
		o.tracker.Failed("", err)
	default:
		o.tracker.Succeeded()
	}
}

// ReconnectLevel is the level of the line that says a session ended with
// err and when the next begins: debug when PostgreSQL went away (its
// outage lines say so once, not once per attempt), else warn.
func (o *Outages) ReconnectLevel(err error) slog.Level {
	if o.tracker.Failing() || LostConnection(err) {
		return slog.LevelDebug
	}
	return slog.LevelWarn
}

// LostConnection reports whether err says that PostgreSQL went away or
// cannot be connected to: it is shutting down ([ErrShuttingDown]: the
// session stopped for it), or the connection was lost
// ([pgerr.ConnectionLost]). A network error of Kafka's (the exactly-once
// producer's start) counts too: Kafka's outage lines say the same once.
func LostConnection(err error) bool {
	return errors.Is(err, ErrShuttingDown) || pgerr.ConnectionLost(err)
}
