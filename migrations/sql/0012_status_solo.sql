-- The claim reads the held rows that are a key of their own (reload rows:
-- a team's reset, a switch-over's adopted rows; rows with a NULL key) in
-- id order, apart from the keyed ones, which it windows by key. An index
-- of each keeps a claim's cost to the rows it takes: a switch-over that
-- adopts a million rows makes every claim read them all otherwise.
CREATE INDEX IF NOT EXISTS {{status_solo_index}} ON {{status}} (id)
    WHERE (record_key IS NULL OR reload) AND status IN ('FAILED', 'DEAD', 'WAITING', 'PAUSED') AND skipped_at IS NULL;
CREATE INDEX IF NOT EXISTS {{status_keyed_index}} ON {{status}} (id)
    WHERE record_key IS NOT NULL AND NOT reload AND status IN ('FAILED', 'DEAD', 'WAITING', 'PAUSED') AND skipped_at IS NULL;
