-- An operator may correct the topic of a parked event before it is retried
-- (`cdc-relay failed retry ID --topic T`): an event parked for an illegal or
-- wrong topic could otherwise never be delivered. The row's topic becomes
-- the corrected one, and original_topic keeps the topic the event was
-- parked for (the first one, when it is corrected twice). NULL for a row
-- whose topic was never corrected, and for every row parked before
-- version 11.
ALTER TABLE {{status}} ADD COLUMN IF NOT EXISTS original_topic text;

-- The held rows whose topic was corrected: a running relay reads their keys
-- every status interval, so that a correction made by another process holds
-- the later events of its key in the new topic behind it.
CREATE INDEX IF NOT EXISTS {{status_corrected_index}} ON {{status}} (id)
    WHERE original_topic IS NOT NULL AND status IN ('FAILED', 'DEAD', 'WAITING', 'PAUSED');
