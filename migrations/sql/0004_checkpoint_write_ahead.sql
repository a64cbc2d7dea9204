-- The relay saves a position in the checkpoint table before it confirms the
-- position to PostgreSQL, so a slot whose confirmed position is ahead of the
-- row was re-created or advanced by another consumer. Rows written by
-- relays from before that rule (write_ahead false) prove nothing: the first
-- start after the upgrade adopts the slot's position.
ALTER TABLE {{checkpoint}} ADD COLUMN IF NOT EXISTS write_ahead boolean NOT NULL DEFAULT false;
