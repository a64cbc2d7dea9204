-- cdc-relay: outside a transaction
-- An event parked is recorded once per commit, topic and source: two outbox
-- tables (or a table and a message prefix) each number their events, so
-- the same id in one transaction is two events when their sources differ,
-- and both must be parked. The index of 0002 left the source out, and the
-- park's ON CONFLICT DO NOTHING dropped the second event without a word.
-- The source of a row parked before version 6 is NULL: coalesce makes it
-- '' (NULLS NOT DISTINCT would need PostgreSQL 15), so such a row sent
-- again is still recognised. Built concurrently, so that the status
-- table's writes go on meanwhile; the old index is dropped only once this
-- one is built and valid (a failed build stops migrate before the drop,
-- and the next migrate drops the invalid index and builds it again).
-- Since version 21 the publisher is part of the identity too: 0021
-- builds that index and drops this one, which is not built again once
-- that one is valid (the line below tells migrate so).
-- cdc-relay: replaced by index status_publisher_copy_index_qualified
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS {{status_source_copy_index}} ON {{status}} (commit_lsn, event_id, topic, (coalesce(source_table, ''))) WHERE event_id IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS {{status_copy_index_qualified}};
