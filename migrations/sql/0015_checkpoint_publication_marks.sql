-- What each outbox table's watch found right when the relay last started on
-- the slot: per table ("schema.table"), its OID and the stamp of the
-- publication's catalog rows that decide what is published of it, as JSON.
-- A relay that starts and finds another stamp knows the publication changed
-- while no relay watched it (inserts made meanwhile may not have been
-- published), and stops with the recover command; recover records the
-- stamps it republished under. Rows of earlier versions keep NULL: the next
-- start records them.
ALTER TABLE {{checkpoint}} ADD COLUMN IF NOT EXISTS publication_marks jsonb;
