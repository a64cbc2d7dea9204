-- An event whose table places it on a partition (the table's partition
-- column, as Debezium's outbox event router's partition placement) keeps
-- that partition when it is parked or held, so that the poller sends it
-- where the stream would have: NULL for an event left to its key's hash.
ALTER TABLE {{status}} ADD COLUMN IF NOT EXISTS record_partition integer;
