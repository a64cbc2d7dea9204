// Package backfill publishes again the rows of one outbox table that an
// SQL predicate selects, through the table's own mapping, beside a running
// relay: `cdc-relay backfill`.
//
// It reads the rows in the order of the table's primary key, up to the
// last key the predicate selected at the start, a batch at a time by
// keyset pagination (WHERE (pk) > (last) ORDER BY pk LIMIT n), each
// batch in a read-only transaction of its own on one connection of its
// own, and produces each batch with a producer built from the relay's
// settings ([sink.New]), waiting for every acknowledgement before it reads
// the next: the key of the last row of a batch is where a later run
// resumes (Config.After). Delivery is at least once: a stop, a crash or a
// resume sends again at most the batch in flight.
//
// One concern per file:
//
//	backfill.go   Run: the steps of one backfill, and its Result; its
//	              connection, and the loop of batches
//	read.go       what it reads, in read-only transactions: the end, the
//	              count, a batch
//	config.go     Config and its defaults
//	key.go        the table's key: its columns, and a key's text (--after)
//	query.go      the SQL of a batch, of the count and of the first and last keys
//	lock.go       one backfill per table: an advisory lock, and who holds it
//	publish.go    a batch of rows → Kafka records (topic, header), produced
//	ratelimit.go  the rows-per-second limit
//	progress.go   the progress bar, the progress lines and the summary
//	record.go     the backfill's row in the table of backfills, which
//	              `cdc-relay status` and a relay's /status read
//
// It reads only committed rows, and never before they are committed: a row
// committed after its key was passed is not read (the relay streams it). It
// writes to the database only its own row in the table of backfills
// (Config.RecordTable).
package backfill
