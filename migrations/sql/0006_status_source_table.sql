-- The outbox table each parked event came from, so that what later becomes
-- of the event (the poller delivers it, it goes DEAD, an operator retries or
-- purges it) can be told to its outbox row. It holds the table's name as the
-- relay's config names it: schema.name, plain text, not quoted as an
-- identifier (public.outbox). Rows parked before version 6 keep NULL.
ALTER TABLE {{status}} ADD COLUMN IF NOT EXISTS source_table text;
