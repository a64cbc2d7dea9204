-- The poller marks a re-delivered event DELIVERED and says when; retention
-- deletes DELIVERED and DEAD rows by age (never FAILED ones).
ALTER TABLE {{status}} ADD COLUMN IF NOT EXISTS delivered_at timestamptz;
CREATE INDEX IF NOT EXISTS {{status_done_index}} ON {{status}} (updated_at) WHERE status <> 'FAILED';
