package report

import (
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// WarnTruncated logs, once per TRUNCATE, that the status table lost
// parked events no one delivered, skipped or purged: between the readings
// before and now its file changed (a TRUNCATE, which a DELETE such as
// `cdc-relay failed purge` does not do) and it holds fewer held rows. The
// poller can no longer deliver them; the rows of outbox tables are still
// in the table, and the line names the recover command that publishes
// them again, from the oldest held row's time less margin (recover's). A
// VACUUM FULL or CLUSTER changes the file too but keeps the rows: no
// warning; nor for the rows the statistics count updated or deleted since
// the last reading (StatusChurn: deliveries, skips, purges), which a
// TRUNCATE does not count, so that a purge followed by VACUUM FULL is not
// taken for one. Statistics reset meanwhile count from zero.
func WarnTruncated(log *slog.Logger, names Names, margin time.Duration, before, now DatabaseStats) {
	held := func(s DatabaseStats) int64 { return s.Failed + s.Dead + s.Waiting + s.Paused }
	churn := now.StatusChurn - before.StatusChurn
	if churn < 0 {
		churn = now.StatusChurn // reset between the readings
	}
	lost := held(before) - held(now) - churn
	if before.StatusFile == 0 || now.StatusFile == before.StatusFile || lost <= 0 {
		return
	}
	var oldest float64
	for _, t := range before.Topics {
		oldest = max(oldest, t.OldestHeldSeconds)
	}
	since := before.At.Add(-time.Duration(oldest*float64(time.Second)) - margin).UTC().Truncate(time.Second).Format(time.RFC3339)
	log.Warn("the status table was emptied (TRUNCATE) while it held parked events the relay had not delivered, skipped or purged: they will not be delivered. "+
		"An outbox table's rows are still in it: stop the relay, run `cdc-relay recover --since "+since+"` with the same flags as run "+
		"(the oldest parked event's time less recover's margin; events already delivered arrive twice), and start the relay again (it publishes the events of a paused topic too). "+
		"Events of logical messages (--message-prefix) had no other copy. To remove parked events on purpose, use `cdc-relay failed purge`",
		"status_table", pgx.Identifier{names.StatusSchema, names.StatusTable}.Sanitize(), "lost_at_least", lost, "held_before", held(before), "since", since)
}
