-- Publishers (issue 48): a parked event is a row of the publisher it was
-- parked for, kafka (the producer) or a webhook publisher a config file
-- names, and a status store reads and writes its own publisher's rows
-- only. Every row parked before version 20 is Kafka's. A constant default
-- adds the column without rewriting the table (PostgreSQL 11 and later
-- keep it in the catalog for the rows that have none), so the table's lock
-- is held for a moment only.
ALTER TABLE {{status}} ADD COLUMN IF NOT EXISTS publisher text NOT NULL DEFAULT 'kafka';

-- A topic is paused for one publisher: the pause table's key gains the
-- publisher, every pause before version 20 being Kafka's. The key is
-- found by its columns (the primary key of 0010, under PostgreSQL's
-- default name) and replaced once: a later run finds the publisher in it
-- and changes nothing. The table holds a row per paused topic, so the
-- new key's index takes no time to build.
ALTER TABLE {{paused_topics}} ADD COLUMN IF NOT EXISTS publisher text NOT NULL DEFAULT 'kafka';
DO {{body_tag}}
DECLARE
    c name;
BEGIN
    IF EXISTS (SELECT 1 FROM pg_constraint AS con JOIN pg_attribute AS a ON a.attrelid = con.conrelid AND a.attnum = ANY (con.conkey)
            WHERE con.conrelid = {{paused_topics_literal}}::regclass AND con.contype = 'p' AND a.attname = 'publisher') THEN
        RETURN;
    END IF;
    FOR c IN SELECT con.conname FROM pg_constraint AS con WHERE con.conrelid = {{paused_topics_literal}}::regclass AND con.contype = 'p'
    LOOP
        EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', {{paused_topics_literal}}::regclass, c);
    END LOOP;
    EXECUTE format('ALTER TABLE %s ADD PRIMARY KEY (slot_name, topic, publisher)', {{paused_topics_literal}}::regclass);
END
{{body_tag}};
