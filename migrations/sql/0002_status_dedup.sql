-- An event recorded as failed is recorded once: PostgreSQL sends a
-- transaction again after a crash or a reconnect, and the relay must not
-- add a second FAILED row for the same event of the same commit. Per
-- topic: an event routed to several topics is one copy per topic, and each
-- copy that cannot be delivered has a row of its own. (Before version 5
-- this index left the topic out; 0005 drops that one.)
CREATE UNIQUE INDEX IF NOT EXISTS {{status_copy_index}} ON {{status}} (commit_lsn, event_id, topic) WHERE event_id IS NOT NULL;
