-- An event recorded as failed is recorded once: PostgreSQL sends a
-- transaction again after a crash or a reconnect, and the relay must not
-- add a second FAILED row for the same event of the same commit.
CREATE UNIQUE INDEX IF NOT EXISTS {{status_event_index}} ON {{status}} (commit_lsn, event_id) WHERE event_id IS NOT NULL;
