-- Ordered parking: while an event of a (topic, key) is held in the status
-- table, the later events of that topic and key are held behind it, in
-- commit order (the table's id), and a topic can be paused.
--
-- WAITING: parked behind an earlier held event of its topic and key.
-- PAUSED: parked because its topic was paused. Neither counts an attempt.

-- A DEAD row an operator skipped (`cdc-relay failed skip`): it no longer
-- holds the events of its key behind it.
ALTER TABLE {{status}} ADD COLUMN IF NOT EXISTS skipped_at timestamptz;

-- The states' CHECK was declared inline by 0001, under PostgreSQL's default
-- name: it is found by its column and its definition (exactly FAILED,
-- DELIVERED and DEAD; a CHECK of the user's own is left alone), dropped,
-- and replaced by one with a name of the relay's, once (a later run finds
-- that one and changes nothing). The new CHECK is added NOT VALID, then
-- validated.
--
-- Once, with the swap: the DEAD rows parked before ordered parking held
-- nothing behind them (the later events of their keys were delivered), so
-- they are marked as not holding their keys: skipped_at, at the time they
-- became DEAD (last_error is kept). Else every key with one would be held
-- from the relay's start until an operator skipped it.
DO {{body_tag}}
DECLARE
    c name;
BEGIN
    IF EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = {{status_literal}}::regclass AND conname = {{status_state_check_literal}}) THEN
        RETURN;
    END IF;
    FOR c IN SELECT con.conname FROM pg_constraint AS con
            JOIN pg_attribute AS a ON a.attrelid = con.conrelid AND a.attname = 'status'
        WHERE con.conrelid = {{status_literal}}::regclass AND con.contype = 'c' AND con.conkey = ARRAY[a.attnum]
            AND ARRAY(SELECT m[1] FROM regexp_matches(pg_get_constraintdef(con.oid), '''([^'']*)''', 'g') AS m ORDER BY 1)
                = ARRAY['DEAD', 'DELIVERED', 'FAILED']
    LOOP
        EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', {{status_literal}}::regclass, c);
    END LOOP;
    EXECUTE format('ALTER TABLE %s ADD CONSTRAINT %I CHECK (status IN (''FAILED'', ''DELIVERED'', ''DEAD'', ''WAITING'', ''PAUSED'')) NOT VALID',
        {{status_literal}}::regclass, {{status_state_check_literal}});
    EXECUTE format('ALTER TABLE %s VALIDATE CONSTRAINT %I', {{status_literal}}::regclass, {{status_state_check_literal}});
    EXECUTE format('UPDATE %s SET skipped_at = updated_at WHERE status = ''DEAD'' AND skipped_at IS NULL', {{status_literal}}::regclass);
END
{{body_tag}};

-- The held rows of each key, in order: the poller's claim and the look-ups
-- of a key's held rows. The key by its hash, so that a key of any size
-- fits the index.
CREATE INDEX IF NOT EXISTS {{status_order_index}} ON {{status}} (topic, sha256(record_key), id)
    WHERE status IN ('FAILED', 'DEAD', 'WAITING', 'PAUSED');

-- The topics paused for a slot's relay, beside the checkpoint table: a
-- paused topic's events are parked as PAUSED until it is resumed; a
-- restart or a standby's takeover keeps the pause.
CREATE TABLE IF NOT EXISTS {{paused_topics}} (
    slot_name text        NOT NULL,
    topic     text        NOT NULL,
    paused_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (slot_name, topic)
);
