// Package backfill publishes again the rows of one outbox table that an
// SQL predicate selects, through the table's own mapping, beside a running
// relay: `cdc-relay backfill`.
//
// It first fixes the rows: it copies the keys the predicate selects into a
// temporary table of its session (the table of selected keys), a chunk at
// a time in the order of the table's primary key by keyset pagination
// (WHERE (pk) > (last) ORDER BY pk LIMIT n), which gives the count. Every
// chunk imports one snapshot, exported when the selection began on the
// lock's session, so rows committed later are the stream's, whatever their
// key, and a backfill ends however fast new rows match; the snapshot ends
// with the selection. Then it reads the selected rows a
// batch at a time, in key order, each chunk and batch in a read-only
// transaction of its own (which may write the temporary table only) on a
// connection of its own, and produces each batch with a producer built
// from the relay's settings ([sink.New]), through the publish engine
// `cdc-relay recover` shares (package republish), waiting for every
// acknowledgement before it reads the next: the key of the last row of a batch is where a later run
// resumes (Config.After). A table whose events go to publishers beside
// Kafka (Config.Publishers: its webhooks) has each batch sent to each of
// them too, at once, and done once every one took it. Delivery is at least once: a stop, a crash or a
// resume sends again at most the batch in flight.
//
// It reads only committed rows, and only those committed when it starts
// (the relay streams the others). It writes to the database only its own
// row in the table of backfills (Config.RecordTable), and its temporary
// table. A privilege its role lacks (TEMPORARY on the database, SELECT on
// the table or on what the predicate reads) stops it with the GRANT to
// run.
package backfill
