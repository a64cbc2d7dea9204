package replication

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/cdc-relay/cdc-relay/internal/pgerr"
)

// Tracker is what the stream needs of the checkpoint tracker
// (*checkpoint.Tracker has it): the position it may confirm, a place for
// keepalive positions, and the in-flight limits that pause reading.
type Tracker interface {
	// Safe is the position PostgreSQL may be told is flushed.
	Safe() pglogrepl.LSN
	// Position records a keepalive's position, read between transactions.
	Position(lsn pglogrepl.LSN)
	// Full reports whether an in-flight limit is reached.
	Full() bool
	// WaitCapacity blocks while an in-flight limit is reached.
	WaitCapacity(ctx context.Context) error
	// WaitIdle blocks until nothing is in flight.
	WaitIdle(ctx context.Context) error
	// InFlight reports the events and bytes in flight.
	InFlight() (events, bytes int64)
}

// Pauser holds reading between transactions (see Options.Pause).
type Pauser interface {
	// Paused reports whether reading is paused. It is called before each
	// message read between transactions, so it must be cheap.
	Paused() bool
	// WaitResumed blocks until reading is no longer paused, or ctx ends.
	WaitResumed(ctx context.Context) error
}

// Handler receives the WAL data of each XLogData message (one pgoutput
// message) in stream order. data is valid only during the call. An error
// stops the stream.
type Handler func(walStart pglogrepl.LSN, data []byte) error

// Options configures [Conn.Stream].
type Options struct {
	// Slot and Publication to stream.
	Slot, Publication string
	// Messages asks pgoutput for logical decoding messages too
	// (pg_logical_emit_message; its option messages, PostgreSQL 14 and
	// later): transactional ones in their transaction, among its rows,
	// others on their own. Off, pgoutput sends none, and a server before
	// 14 is not asked for an option it does not know.
	Messages bool
	// Start is the position to stream from: PostgreSQL skips transactions
	// that end before it. Zero, or a position behind the slot's confirmed
	// one, streams from the slot's confirmed position.
	Start pglogrepl.LSN
	// Tracker supplies the position to confirm, bounds what is in flight,
	// and receives keepalive positions.
	Tracker Tracker
	// StatusInterval is the most time between standby status updates.
	// Default 1s.
	StatusInterval time.Duration
	// StopTimeout bounds a stop: finishing the transaction being read and
	// waiting for its events to be acked. Default 30s.
	StopTimeout time.Duration
	// Timeout is the most time the server may stay silent. A server with
	// nothing to send sends nothing, so after a third of it without a
	// message the reader asks for a keepalive (a status update with the
	// reply flag); when nothing at all arrives for Timeout, Stream returns
	// an error wrapping ErrSilent. Time the reader spends not reading
	// (waiting for capacity) does not count. Timeout also bounds each
	// write and START_REPLICATION. Default 30s.
	Timeout time.Duration
	// Pause, if set, holds reading between transactions while it reports
	// paused. Standby status updates go on meanwhile, so the server keeps
	// the connection (the slot keeps the WAL), events in flight are
	// confirmed as they are delivered, and a stop ends the wait.
	Pause Pauser
	// Logger; nil discards.
	Logger *slog.Logger
	// StartedLevel is the level of the line that says the stream started;
	// the zero value is info. A caller that says otherwise that streaming
	// resumed (a reconnect after PostgreSQL went away) lowers it to debug.
	StartedLevel slog.Level
	// OnStarted, if set, is called once the server has started streaming.
	OnStarted func()
	// OnConfirm, if set, is called after each standby status update with
	// the position it confirmed.
	OnConfirm func(pglogrepl.LSN)
	// BeforeFinalStatus, if set, is called after a stop, before the final
	// standby status update, with a context bounded by a few seconds: a
	// caller whose Tracker.Safe waits for the position to be saved first
	// saves it there, so the final update confirms everything delivered.
	// An error is logged, and the update confirms what Safe allows.
	BeforeFinalStatus func(context.Context) error
	// OnStopTimeout, if set, is called when a stop outlives StopTimeout, so
	// the caller can abandon work the handler may be blocked in.
	OnStopTimeout func()
}

// ErrStopTimeout is returned when a stop could not finish the current
// transaction or drain the in-flight events within Options.StopTimeout.
// Nothing is lost (the unconfirmed transaction is sent again after a
// restart), but consumers may see some of its events twice.
var ErrStopTimeout = errors.New("stop timed out before the in-flight transaction was delivered")

// ErrSilent is returned (wrapped) by [Conn.Stream] when nothing came from
// the server for Options.Timeout, not even the keepalive it was asked for,
// or a write to it did not complete within that time: the connection is
// presumed dead (a partition, a hung proxy), although no error says so.
// Nothing is lost: a new session resumes from the slot.
var ErrSilent = errors.New("the connection to PostgreSQL is presumed dead")

// Stream starts replication and runs until ctx is done or an error occurs.
// When ctx is done it reads on to the end of the current transaction, waits
// for every event in flight to be acked, confirms the final position, and
// returns nil. The caller must not use the connection concurrently.
//
// Every read and write of the connection happens on the calling goroutine:
// standby status updates are sent between messages, when the read deadline
// set for the next update expires, and while reading waits for capacity. A
// second goroutine only moves the read deadline (net.Conn allows that
// concurrently) to wake the reader when a stop begins and when it times out.
func (c *Conn) Stream(ctx context.Context, opts Options, h Handler) error {
	if opts.StatusInterval <= 0 {
		opts.StatusInterval = time.Second
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = 30 * time.Second
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if err := ValidSlotName(opts.Slot); err != nil {
		return err
	}
	startCtx, cancelStart := context.WithTimeout(context.WithoutCancel(ctx), opts.Timeout)
	err := pglogrepl.StartReplication(startCtx, c.pg, opts.Slot, opts.Start, pglogrepl.StartReplicationOptions{
		PluginArgs: pluginArgs(opts),
	})
	if err != nil && startCtx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("%w (no answer within %s): %w", ErrSilent, opts.Timeout, err)
	}
	cancelStart()
	if err != nil {
		return fmt.Errorf("start replication on slot %q: %w%s", opts.Slot, err, hint(err))
	}
	opts.Logger.Log(ctx, opts.StartedLevel, "replication started", "slot", opts.Slot, "publication", opts.Publication, "from", opts.Start)
	if opts.OnStarted != nil {
		opts.OnStarted()
	}

	now := time.Now()
	s := &streamer{c: c, opts: opts, h: h, nextStatus: now.Add(opts.StatusInterval), heard: now}
	// hardCtx ends waits that a stop must not outlive.
	hardCtx, hardCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer hardCancel()

	readerDone := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-ctx.Done():
		case <-readerDone:
			return
		}
		s.stopping.Store(true)
		s.wake()
		deadline := time.NewTimer(opts.StopTimeout)
		defer deadline.Stop()
		select {
		case <-deadline.C:
			s.hard.Store(true)
			hardCancel()
			if opts.OnStopTimeout != nil {
				opts.OnStopTimeout()
			}
			s.wake()
		case <-readerDone:
		}
	}()

	readErr := s.read(hardCtx)
	if readErr == nil {
		// Stopped at a transaction boundary: let the last events land.
		if err := s.waitFor(hardCtx, opts.Tracker.WaitIdle, nil); err != nil {
			if hardCtx.Err() == nil {
				readErr = err
			} else {
				ev, _ := opts.Tracker.InFlight()
				opts.Logger.Warn("stop: events still in flight after the stop timeout", "events", ev)
				readErr = ErrStopTimeout
			}
		}
	}
	close(readerDone)
	wg.Wait()
	// After a stop, a final update, so the next start does not resend what
	// was delivered. Not after a failed read: pgconn is closing the
	// connection then, and writes to it on a goroutine of its own.
	if readErr == nil || errors.Is(readErr, ErrStopTimeout) {
		if opts.BeforeFinalStatus != nil {
			fctx, cancel := context.WithTimeout(context.Background(), endCopyTimeout)
			if err := opts.BeforeFinalStatus(fctx); err != nil {
				opts.Logger.Log(fctx, pgerr.Level(err), "stop: could not save the final position; the next start may send some events again", "err", err)
			}
			cancel()
		}
		if err := s.sendStatus(); err != nil && readErr == nil {
			readErr = err
		}
		s.endCopy()
	}
	return readErr
}

// endCopyTimeout bounds the wait for the server to end the stream.
const endCopyTimeout = 5 * time.Second

// endCopy ends the stream the way the protocol does (CopyDone, and the
// server's reply), so the server has applied the final standby status
// update before the connection closes. Closing at once instead races with
// the walsender: one that is still sending meets a reset connection and
// exits before it reads the update, and the next start resends what was
// delivered.
func (s *streamer) endCopy() {
	_ = s.c.pg.Conn().SetReadDeadline(time.Now().Add(endCopyTimeout))
	_ = s.c.pg.Conn().SetWriteDeadline(time.Now().Add(endCopyTimeout))
	if _, err := pglogrepl.SendStandbyCopyDone(context.Background(), s.c.pg); err != nil {
		s.opts.Logger.Log(context.Background(), pgerr.Level(err), "stop: the server did not confirm the end of the stream; the next start may send some events again", "err", err)
	}
}

// streamer is the state of one Stream call. Apart from the atomics, it is
// used by the reading goroutine only.
type streamer struct {
	c    *Conn
	opts Options
	h    Handler

	inTx       bool
	stopping   atomic.Bool // a stop began: finish the transaction, then return
	hard       atomic.Bool // the stop timed out: return now
	nextStatus time.Time   // when the next standby status update is due
	armed      time.Time   // the read deadline last set by the reader
	lastSent   pglogrepl.LSN

	// The server's silence, checked when the reader wakes (see
	// checkSilence): a flag per message costs less than a clock reading.
	got    bool      // a message arrived since the reader last woke
	heard  time.Time // when the reader last knew the server was alive, or began to listen again
	probed bool      // a keepalive was asked for since heard
}

// wake makes a blocked read return a timeout now. Safe from any goroutine.
func (s *streamer) wake() { _ = s.c.pg.Conn().SetReadDeadline(time.Now()) }

// read is the reader loop. It returns nil after a clean stop at a
// transaction boundary.
func (s *streamer) read(hardCtx context.Context) error {
	for {
		if s.opts.Tracker.Full() {
			// A stop between transactions need not wait for capacity: it
			// reads nothing more.
			stopNow := func() bool { return s.stopping.Load() && !s.inTx }
			if err := s.waitFor(hardCtx, s.opts.Tracker.WaitCapacity, stopNow); err != nil {
				if hardCtx.Err() != nil {
					return ErrStopTimeout
				}
				return err
			}
			// The server's silence counts from here: while waiting, the
			// reader did not listen.
			s.heard, s.probed = time.Now(), false
		}
		if s.opts.Pause != nil && !s.inTx && s.opts.Pause.Paused() {
			if err := s.waitFor(hardCtx, s.opts.Pause.WaitResumed, s.stopping.Load); err != nil {
				if hardCtx.Err() != nil {
					return ErrStopTimeout
				}
				return err
			}
			s.heard, s.probed = time.Now(), false
		}
		if d := s.deadline(); s.armed != d {
			if err := s.c.pg.Conn().SetReadDeadline(d); err != nil {
				return fmt.Errorf("replication slot %q: set read deadline: %w", s.opts.Slot, err)
			}
			s.armed = d
		}
		// Checked after the deadline is set, so that a wake-up cannot be
		// overwritten unseen.
		if s.hard.Load() {
			return s.stoppedHard()
		}
		if s.stopping.Load() && !s.inTx {
			return nil
		}
		msg, err := s.c.pg.ReceiveMessage(context.Background())
		if err != nil {
			if !pgconn.Timeout(err) {
				return fmt.Errorf("receive from replication slot %q: %w", s.opts.Slot, err)
			}
			// The status deadline, the silence deadline, or a wake-up from
			// a stop.
			s.armed = time.Time{}
			if err := s.checkSilence(); err != nil {
				return err
			}
			if err := s.statusIfDue(); err != nil {
				return err
			}
			continue
		}
		s.got = true
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

func (s *streamer) stoppedHard() error {
	if s.inTx {
		return ErrStopTimeout
	}
	return nil
}

// waitFor runs a tracker wait, sending standby status updates while it
// lasts (the server drops a replica that stays silent for
// wal_sender_timeout). It returns nil when the wait succeeds or done says
// to stop waiting, and an error when the stop times out (hardCtx).
func (s *streamer) waitFor(hardCtx context.Context, wait func(context.Context) error, done func() bool) error {
	for {
		wctx, cancel := context.WithDeadline(hardCtx, s.nextStatus)
		err := wait(wctx)
		cancel()
		switch {
		case err == nil:
			return nil
		case hardCtx.Err() != nil:
			return hardCtx.Err()
		}
		if err := s.statusIfDue(); err != nil {
			return err
		}
		if done != nil && done() {
			return nil
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
		if s.opts.Logger.Enabled(context.Background(), slog.LevelDebug) {
			s.opts.Logger.Debug("keepalive", "wal_end", ka.ServerWALEnd, "reply", ka.ReplyRequested, "in_tx", s.inTx)
		}
		reply := ka.ReplyRequested
		if !s.inTx {
			// In stream order: the position cannot overtake an event that
			// was read before it.
			s.opts.Tracker.Position(ka.ServerWALEnd)
			reply = reply || s.opts.Tracker.Safe() > s.lastSent
		}
		if reply {
			return s.sendStatus()
		}
	}
	return nil
}

// deadline is when the reader must wake: for the next standby status
// update, or to ask a quiet server for a keepalive, or to give up on a
// silent one.
func (s *streamer) deadline() time.Time {
	silence := s.heard.Add(s.opts.Timeout)
	if !s.probed {
		silence = s.heard.Add(s.opts.Timeout / 3)
	}
	if silence.Before(s.nextStatus) {
		return silence
	}
	return s.nextStatus
}

// checkSilence runs each time the reader wakes without a message: it notes
// whether any arrived since it last woke, asks a server that has been quiet
// for a third of the timeout for a keepalive, and returns an error wrapping
// ErrSilent when the server has said nothing for the whole timeout.
func (s *streamer) checkSilence() error {
	now := time.Now()
	if s.got {
		s.got, s.heard, s.probed = false, now, false
		return nil
	}
	quiet := now.Sub(s.heard)
	switch {
	case quiet >= s.opts.Timeout:
		return fmt.Errorf("replication slot %q: no message from PostgreSQL for %s: %w", s.opts.Slot, s.opts.Timeout, ErrSilent)
	case !s.probed && quiet >= s.opts.Timeout/3:
		s.probed = true
		return s.send(true)
	}
	return nil
}

// statusIfDue sends a standby status update when one is due.
func (s *streamer) statusIfDue() error {
	if time.Now().Before(s.nextStatus) {
		return nil
	}
	return s.sendStatus()
}

// sendStatus confirms the tracker's safe position and schedules the next
// update.
func (s *streamer) sendStatus() error { return s.send(false) }

// send is sendStatus; with reply set, the update asks the server to answer
// at once with a keepalive. The write may take at most Options.Timeout.
func (s *streamer) send(reply bool) error {
	s.nextStatus = time.Now().Add(s.opts.StatusInterval)
	pos := s.opts.Tracker.Safe()
	if pos == 0 {
		return nil
	}
	if err := s.c.pg.Conn().SetWriteDeadline(time.Now().Add(s.opts.Timeout)); err != nil {
		return fmt.Errorf("replication slot %q: set write deadline: %w", s.opts.Slot, err)
	}
	err := pglogrepl.SendStandbyStatusUpdate(context.Background(), s.c.pg, pglogrepl.StandbyStatusUpdate{
		WALWritePosition: pos,
		WALFlushPosition: pos,
		WALApplyPosition: pos,
		ReplyRequested:   reply,
	})
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = fmt.Errorf("%w (a write did not complete within %s): %w", ErrSilent, s.opts.Timeout, err)
	}
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
