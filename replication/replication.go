package replication

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/cdc-relay/cdc-relay/checkpoint"
)

// Conn is a replication connection (replication=database).
type Conn struct {
	pg *pgconn.PgConn
}

// Connect opens a replication connection to url. The session runs with
// TimeZone=UTC and DateStyle=ISO, which the decoder's timestamp parsing
// relies on.
func Connect(ctx context.Context, url, appName string) (*Conn, error) {
	cfg, err := pgconn.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse PostgreSQL URL: %w", err)
	}
	cfg.RuntimeParams["replication"] = "database"
	cfg.RuntimeParams["TimeZone"] = "UTC"
	cfg.RuntimeParams["DateStyle"] = "ISO"
	if appName != "" {
		cfg.RuntimeParams["application_name"] = appName
	}
	pg, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open replication connection to %s:%d as %q: %w%s", cfg.Host, cfg.Port, cfg.User, err, hint(err))
	}
	return &Conn{pg: pg}, nil
}

// hint says what an operator can do about common replication errors.
func hint(err error) string {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return ""
	}
	switch {
	case pgErr.Code == "42501" || strings.Contains(pgErr.Message, "replication role"):
		return " (the role needs the REPLICATION attribute: ALTER ROLE <name> WITH REPLICATION)"
	case strings.Contains(pgErr.Message, "pg_hba.conf") && strings.Contains(pgErr.Message, "replication"):
		return " (allow it in pg_hba.conf with a line for database \"replication\" or the database name, then reload PostgreSQL)"
	case strings.Contains(pgErr.Message, "wal_level"):
		return " (set wal_level = logical and restart PostgreSQL)"
	case pgErr.Code == "55006" || strings.Contains(pgErr.Message, "is active for PID"):
		return " (another consumer is reading this slot; only one relay may run per slot)"
	case strings.Contains(pgErr.Message, "publication") && strings.Contains(pgErr.Message, "does not exist"):
		return " (create it with `cdc-relay migrate`)"
	}
	return ""
}

// Close closes the connection.
func (c *Conn) Close(ctx context.Context) error { return c.pg.Close(ctx) }

// CreateSlot creates a pgoutput logical slot and returns its consistent
// point: the slot will stream transactions committed after it.
func (c *Conn) CreateSlot(ctx context.Context, slot string) (pglogrepl.LSN, error) {
	res, err := pglogrepl.CreateReplicationSlot(ctx, c.pg, slot, "pgoutput",
		pglogrepl.CreateReplicationSlotOptions{Mode: pglogrepl.LogicalReplication})
	if err != nil {
		return 0, fmt.Errorf("create replication slot %q: %w%s", slot, err, hint(err))
	}
	lsn, err := pglogrepl.ParseLSN(res.ConsistentPoint)
	if err != nil {
		return 0, fmt.Errorf("create replication slot %q: consistent point: %w", slot, err)
	}
	return lsn, nil
}

// Handler receives the WAL data of each XLogData message (one pgoutput
// message) in stream order. data is valid only during the call. An error
// stops the stream.
type Handler func(walStart pglogrepl.LSN, data []byte) error

// Options configures [Conn.Stream].
type Options struct {
	// Slot and Publication to stream.
	Slot, Publication string
	// Tracker supplies the position to confirm, bounds what is in flight,
	// and receives keepalive positions.
	Tracker *checkpoint.Tracker
	// StatusInterval is the most time between standby status updates.
	// Default 1s.
	StatusInterval time.Duration
	// StopTimeout bounds a stop: finishing the transaction being read and
	// waiting for its events to be acked. Default 30s.
	StopTimeout time.Duration
	// Logger; nil discards.
	Logger *slog.Logger
	// OnConfirm, if set, is called after each standby status update with
	// the position it confirmed.
	OnConfirm func(pglogrepl.LSN)
	// OnStopTimeout, if set, is called when a stop outlives StopTimeout, so
	// the caller can abandon work the handler may be blocked in.
	OnStopTimeout func()
}

// ErrStopTimeout is returned when a stop could not finish the current
// transaction or drain the in-flight events within Options.StopTimeout.
// Nothing is lost (the unconfirmed transaction is sent again after a
// restart), but consumers may see some of its events twice.
var ErrStopTimeout = errors.New("stop timed out before the in-flight transaction was delivered")

// Stream starts replication and runs until ctx is done or an error occurs.
// When ctx is done it reads on to the end of the current transaction, waits
// for every event in flight to be acked, confirms the final position, and
// returns nil. The caller must not use the connection concurrently.
func (c *Conn) Stream(ctx context.Context, opts Options, h Handler) error {
	if opts.StatusInterval <= 0 {
		opts.StatusInterval = time.Second
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = 30 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	pub := strings.ReplaceAll(opts.Publication, `'`, `''`)
	err := pglogrepl.StartReplication(context.WithoutCancel(ctx), c.pg, opts.Slot, 0, pglogrepl.StartReplicationOptions{
		PluginArgs: []string{"proto_version '1'", "publication_names '" + pub + "'"},
	})
	if err != nil {
		return fmt.Errorf("start replication on slot %q: %w%s", opts.Slot, err, hint(err))
	}
	opts.Logger.Info("replication started", "slot", opts.Slot, "publication", opts.Publication, "from", opts.Tracker.Safe())

	s := &streamer{c: c, opts: opts, h: h, kick: make(chan struct{}, 1)}
	// hardCtx ends waits that a stop must not outlive.
	hardCtx, hardCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer hardCancel()

	var wg sync.WaitGroup
	statusDone := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.statusLoop(statusDone)
	}()

	// On stop: wake the reader now, and give up after StopTimeout.
	readerDone := make(chan struct{})
	var deadline *time.Timer
	var mu sync.Mutex
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-ctx.Done():
		case <-readerDone:
			return
		}
		s.stopping.Store(true)
		mu.Lock()
		deadline = time.AfterFunc(opts.StopTimeout, func() {
			s.hard.Store(true)
			hardCancel()
			if opts.OnStopTimeout != nil {
				opts.OnStopTimeout()
			}
			_ = c.pg.Conn().SetReadDeadline(time.Now())
		})
		mu.Unlock()
		_ = c.pg.Conn().SetReadDeadline(time.Now())
	}()

	readErr := s.read(hardCtx)
	close(readerDone)
	if readErr == nil {
		// Stopped at a transaction boundary: let the last events land.
		if err := opts.Tracker.WaitIdle(hardCtx); err != nil {
			ev, _ := opts.Tracker.InFlight()
			opts.Logger.Warn("stop: events still in flight after the stop timeout", "events", ev)
			readErr = ErrStopTimeout
		}
	}
	close(statusDone)
	mu.Lock()
	if deadline != nil {
		deadline.Stop()
	}
	mu.Unlock()
	wg.Wait()
	// A final update, so the next start does not resend what was delivered.
	if err := s.sendStatus(false); err != nil && readErr == nil {
		readErr = err
	}
	return readErr
}

type streamer struct {
	c    *Conn
	opts Options
	h    Handler

	inTx     bool
	stopping atomic.Bool
	hard     atomic.Bool
	// kick asks the status loop for an update now (a keepalive asked for a
	// reply, or moved the safe position while idle).
	kick chan struct{}

	sendMu   sync.Mutex
	lastSent pglogrepl.LSN
}

// read is the reader loop. It returns nil after a clean stop.
func (s *streamer) read(hardCtx context.Context) error {
	for {
		if s.stopping.Load() && !s.inTx {
			return nil
		}
		if err := s.opts.Tracker.WaitCapacity(hardCtx); err != nil {
			return ErrStopTimeout
		}
		msg, err := s.c.pg.ReceiveMessage(context.Background())
		if err != nil {
			if pgconn.Timeout(err) {
				if s.hard.Load() {
					if s.inTx {
						return ErrStopTimeout
					}
					return nil
				}
				if s.stopping.Load() && s.inTx {
					// Finish the transaction being read before stopping.
					_ = s.c.pg.Conn().SetReadDeadline(time.Time{})
					if s.hard.Load() {
						return ErrStopTimeout
					}
				}
				continue
			}
			return fmt.Errorf("receive from replication slot %q: %w", s.opts.Slot, err)
		}
		switch msg := msg.(type) {
		case *pgproto3.CopyData:
			if err := s.copyData(msg.Data); err != nil {
				return err
			}
		case *pgproto3.ErrorResponse:
			err := pgconn.ErrorResponseToPgError(msg)
			return fmt.Errorf("replication slot %q: %w%s", s.opts.Slot, err, hint(err))
		case *pgproto3.CopyDone:
			return fmt.Errorf("replication slot %q: server ended the stream", s.opts.Slot)
		default:
			// Notices and parameter statuses: nothing to do.
		}
	}
}

func (s *streamer) copyData(data []byte) error {
	if len(data) == 0 {
		return nil
	}
	switch data[0] {
	case pglogrepl.XLogDataByteID:
		xld, err := pglogrepl.ParseXLogData(data[1:])
		if err != nil {
			return fmt.Errorf("parse XLogData: %w", err)
		}
		if len(xld.WALData) > 0 {
			switch xld.WALData[0] {
			case 'B':
				s.inTx = true
			case 'C':
				s.inTx = false
			}
		}
		return s.h(xld.WALStart, xld.WALData)
	case pglogrepl.PrimaryKeepaliveMessageByteID:
		ka, err := pglogrepl.ParsePrimaryKeepaliveMessage(data[1:])
		if err != nil {
			return fmt.Errorf("parse keepalive: %w", err)
		}
		kick := ka.ReplyRequested
		if s.opts.Logger.Enabled(context.Background(), slog.LevelDebug) {
			s.opts.Logger.Debug("keepalive", "wal_end", ka.ServerWALEnd, "reply", ka.ReplyRequested, "in_tx", s.inTx)
		}
		if !s.inTx {
			// In stream order: the position cannot overtake an event that
			// was read before it.
			s.opts.Tracker.Position(ka.ServerWALEnd)
			kick = kick || s.opts.Tracker.Safe() > s.sent()
		}
		if kick {
			select {
			case s.kick <- struct{}{}:
			default:
			}
		}
	}
	return nil
}

func (s *streamer) sent() pglogrepl.LSN {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	return s.lastSent
}

// statusLoop sends standby status updates until done is closed.
func (s *streamer) statusLoop(done <-chan struct{}) {
	t := time.NewTicker(s.opts.StatusInterval)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		case <-s.kick:
		}
		if err := s.sendStatus(false); err != nil {
			s.opts.Logger.Warn("standby status update failed", "err", err)
		}
	}
}

// sendStatus confirms the tracker's safe position. It runs concurrently
// with the reader: writes and reads use separate halves of the connection.
func (s *streamer) sendStatus(reply bool) error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	pos := s.opts.Tracker.Safe()
	if pos == 0 {
		return nil
	}
	err := pglogrepl.SendStandbyStatusUpdate(context.Background(), s.c.pg, pglogrepl.StandbyStatusUpdate{
		WALWritePosition: pos,
		WALFlushPosition: pos,
		WALApplyPosition: pos,
		ReplyRequested:   reply,
	})
	if err != nil {
		return fmt.Errorf("send standby status update (%s) on slot %q: %w", pos, s.opts.Slot, err)
	}
	if pos != s.lastSent {
		s.opts.Logger.Debug("confirmed", "lsn", pos)
	}
	s.lastSent = pos
	if s.opts.OnConfirm != nil {
		s.opts.OnConfirm(pos)
	}
	return nil
}
