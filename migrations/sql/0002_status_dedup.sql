-- An event recorded as failed is recorded once: PostgreSQL sends a
-- transaction again after a crash or a reconnect, and the relay must not
-- add a second FAILED row for the same event of the same commit. Per
-- topic: an event routed to several topics is one copy per topic, and each
-- copy that cannot be delivered has a row of its own. (Before version 5
-- this index left the topic out; 0005 drops that one.) Since version 14 the
-- source is part of an event's identity too: 0014 builds that index
-- concurrently and then drops this one, and since version 21 the
-- publisher too (0021 replaces 0014's the same way), so this one is
-- created only for a status table that has none of them (a new one),
-- never again after 0014.
DO {{body_tag}}
BEGIN
    IF to_regclass({{status_source_copy_literal}}) IS NULL AND to_regclass({{status_publisher_copy_literal}}) IS NULL THEN
        CREATE UNIQUE INDEX IF NOT EXISTS {{status_copy_index}} ON {{status}} (commit_lsn, event_id, topic) WHERE event_id IS NOT NULL;
    END IF;
END
{{body_tag}};
