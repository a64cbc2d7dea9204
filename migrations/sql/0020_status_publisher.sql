-- Publishers (issue 48): a parked event is a row of the publisher it was
-- parked for, kafka (the producer) or a webhook publisher a config file
-- names, and a status store reads and writes its own publisher's rows
-- only. Every row parked before version 20 is Kafka's. A constant default
-- adds the column without rewriting the table (PostgreSQL 11 and later
-- keep it in the catalog for the rows that have none), so the table's lock
-- is held for a moment only.
ALTER TABLE {{status}} ADD COLUMN IF NOT EXISTS publisher text NOT NULL DEFAULT 'kafka';

-- Every statement of a status store names its publisher (publisher =
-- 'kafka'). Until an ANALYZE gives the new column statistics, the planner
-- takes such a condition to keep one row in 200, where it keeps them all,
-- and a large status table may wait days for autovacuum's: the column is
-- analyzed once, here (a sample of the table; once it has statistics, a
-- later migrate does not analyze it again, and an empty table's costs
-- nothing).
DO {{body_tag}}
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_stats AS st JOIN pg_class AS c ON c.relname = st.tablename
            JOIN pg_namespace AS n ON n.oid = c.relnamespace AND n.nspname = st.schemaname
            WHERE c.oid = {{status_literal}}::regclass AND st.attname = 'publisher') THEN
        EXECUTE format('ANALYZE %s (publisher)', {{status_literal}}::regclass);
    END IF;
END
{{body_tag}};

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
