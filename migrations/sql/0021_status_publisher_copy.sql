-- cdc-relay: outside a transaction
-- An event parked is recorded once per commit, topic, source and
-- publisher: an event sent to Kafka and to a webhook publisher that both
-- refuse it is parked twice, a row each, and each publisher's relay
-- recognises its own row when PostgreSQL sends the transaction again. The
-- index of 0014 left the publisher out: the second publisher's park would
-- be dropped by its ON CONFLICT DO NOTHING. Built concurrently, as 0014's,
-- so that the status table's writes go on meanwhile; the old index is
-- dropped only once this one is built and valid (a failed build stops
-- migrate before the drop, and the next migrate drops the invalid index
-- and builds it again). 0002 and 0014 build none of theirs again once this
-- one is valid.
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS {{status_publisher_copy_index}} ON {{status}} (commit_lsn, event_id, topic, (coalesce(source_table, '')), publisher) WHERE event_id IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS {{status_source_copy_index_qualified}};
