-- cdc-relay: outside a transaction
-- The claim reads the held rows that are a key of their own (reload rows:
-- a team's reset, a switch-over's adopted rows; rows with a NULL key) in
-- id order, apart from the keyed ones, which it windows by key. An index
-- of each keeps a claim's cost to the rows it takes: a switch-over that
-- adopts a million rows makes every claim read them all otherwise.
-- Built concurrently, one statement at a time, so that the status table's
-- writes (the relay's parks, the poller, the reset trigger that the
-- application's updates fire) go on meanwhile; an index an interrupted
-- build left invalid is dropped and built again by the next migrate.
CREATE INDEX CONCURRENTLY IF NOT EXISTS {{status_solo_index}} ON {{status}} (id)
    WHERE (record_key IS NULL OR reload) AND status IN ('FAILED', 'DEAD', 'WAITING', 'PAUSED') AND skipped_at IS NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS {{status_keyed_index}} ON {{status}} (id)
    WHERE record_key IS NOT NULL AND NOT reload AND status IN ('FAILED', 'DEAD', 'WAITING', 'PAUSED') AND skipped_at IS NULL;
