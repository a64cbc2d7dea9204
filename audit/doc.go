// Package audit checks that the rows of one outbox table reached Kafka:
// `cdc-relay audit`.
//
// It reads the rows of the table (or of a time or id range of it) and
// computes, with the table's own mapping (package decoder, as the relay
// and a backfill do), each row's topics, record key and "id" header; then
// it reads the records of those topics from the first offset of the time
// window (the broker's timestamp index, ListOffsets by timestamp) to the
// end offsets taken once the rows were read, and matches each record to
// its row by its "id" header, confirmed by its key (a record of another
// table sharing the topic whose id is a row's is not that row's, unless
// their keys are equal too). It reports, exactly:
//
//   - missing events: a row (on one of its topics) with no record;
//   - duplicates: a row with more than one record on one of its topics;
//   - events on the wrong topic: a record whose id is a row's, on a topic
//     the row's mapping does not send it to;
//   - keys out of commit order: two rows of one topic and record key whose
//     first records are not in the rows' order in the partition (or sit in
//     different partitions, unless the table's partition column placed
//     both rows: Kafka keeps no order between partitions).
//
// Commit order is what the table can tell of it: the order column
// ([Config.OrderColumn]: an integer such as a bigserial primary key, or a
// timestamp), which is commit order where each key's events are written
// one transaction after another; rows with the same order value are not
// compared with each other, but each is with all the rows of lower
// values (a tie hides no earlier row's record after it). Without an order column, order is not checked, and the
// result says so.
//
// Memory is bounded by the rows, not the records: about 60 bytes a row
// (an expected record's hashes, order value and first position) plus the
// text of its id and up to 64 bytes of its key, kept in two byte arenas;
// records are read a fetch at a time and not kept. Reads on both sides
// go at most Config.RowRate rows and Config.RecordRate records a second.
// It writes nothing to PostgreSQL or Kafka.
package audit
