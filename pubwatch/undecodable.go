package pubwatch

import (
	"context"
	"fmt"
	"time"

	"github.com/cdc-relay/cdc-relay/internal/fatal"
	"github.com/cdc-relay/cdc-relay/internal/pgdb"
	"github.com/cdc-relay/cdc-relay/replication"
)

// pubCheckTimeout bounds the reads that judge a missing publication.
const pubCheckTimeout = 5 * time.Second

// Undecodable returns a [fatal.Error] when err, a session's, is
// the walsender refusing to decode because the publication does not exist
// while it exists now: it was dropped and created again, or renamed and
// renamed back, after the relay's checkpoint. pgoutput reads it as of the
// WAL it decodes, so the slot can never get past the WAL written while it
// was missing, and every reconnect would fail the same way. The error says
// where the relay stopped and the command that resumes (`cdc-relay recover
// --recreate-slot`). It returns nil for any other error, and when the
// publication is missing now too, or the database does not answer (the
// session is then tried again, as before).
func Undecodable(ctx context.Context, db pgdb.DB, cfg Config, err error) error {
	if !replication.PublicationMissing(err) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, pubCheckTimeout)
	defer cancel()
	var exists bool
	if qerr := db.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = $1)", cfg.Publication).Scan(&exists); qerr != nil || !exists {
		return nil
	}
	cp, _, lerr := cfg.Store.Load(ctx, cfg.Slot)
	if lerr != nil {
		return nil
	}
	at, what := cp.Since()
	return fatal.Error{Err: fmt.Errorf("%w. Publication %q exists now but did not in the WAL replication slot %q must decode next: it was dropped and created again, or renamed and renamed back, "+
		"after the relay's last confirmed position, and pgoutput reads a publication as of the WAL it decodes, so the slot can never get past that WAL, "+
		"and creating the publication again does not help. The relay confirmed everything up to %s and stopped. To go on: run `cdc-relay recover --recreate-slot` "+
		"with the same flags as run (no relay running on the slot): it drops the slot, creates it again at the current WAL position, and publishes again the outbox rows "+
		"written since %s (%s, less recover's margin of %s; rows already delivered arrive twice; logical messages of that WAL are not recovered); then start the relay again",
		err, cfg.Publication, cfg.Slot, cp.LSN, at.UTC().Add(-RecoverMargin).Truncate(time.Second).Format(time.RFC3339), what, RecoverMargin)}
}
