-- The status table's first deduplication index, on (commit_lsn, event_id),
-- kept all but one copy of an event routed to several topics out of the
-- table: 0002 now creates the index per topic, and this drops the old one.
DROP INDEX IF EXISTS {{status_event_index}};
