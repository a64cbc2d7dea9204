-- The stream a slot's row belongs to: a random id, new whenever the relay
-- creates the slot (a new slot is a new stream, WAL it never read). Exactly-
-- once delivery writes it in every record of the checkpoint topic, so that a
-- database copied from another (a restored backup, a clone), whose relay
-- creates its own slot, does not take the other's Kafka position for its
-- own; a promoted standby keeps the slot and the row, so the same id. Rows
-- of earlier versions keep NULL until the next start gives them one.
ALTER TABLE {{checkpoint}} ADD COLUMN IF NOT EXISTS stream_id text;
