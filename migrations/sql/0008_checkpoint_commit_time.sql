-- The relay saves with each position the commit time of the newest
-- transaction at or before it, so that `cdc-relay recover` finds the rows
-- of the transactions after the position by their timestamp column, however
-- long after their commit the position was saved. NULL (rows of earlier
-- versions, and a row saved when its slot was created) means: use
-- updated_at.
ALTER TABLE {{checkpoint}} ADD COLUMN IF NOT EXISTS commit_time timestamptz;
