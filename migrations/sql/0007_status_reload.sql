-- Events to send again from their outbox row as it is now, rather than
-- from a copy: a row whose status was set back to one of its table's
-- pending values (the team's own reset), and the rows adopted at the
-- switch-over (pending when the relay's slot was created). The poller
-- reads the outbox row at each attempt (reload), and keeps the record it
-- read in the status row; before the first, a new one's topic is '' and
-- its commit_lsn NULL (it was committed before the slot, or never read from
-- it).
ALTER TABLE {{status}} ADD COLUMN IF NOT EXISTS reload boolean NOT NULL DEFAULT false;
CREATE INDEX IF NOT EXISTS {{status_source_index}} ON {{status}} (source_table, event_id) WHERE source_table IS NOT NULL;

-- The trigger function a table with pending values calls after an UPDATE
-- that sets its status column back to one of them (`migrate` creates the
-- trigger, with the WHEN clause that says so): it makes the event's
-- status row due again, to be sent again as the outbox row is now, or adds
-- one (nothing for a row whose id is NULL: no event can be found by it).
-- TG_ARGV[0] is the outbox table's id column, TG_ARGV[1] its name as
-- the relay's config gives it (schema.name). SECURITY DEFINER: the role
-- that resets a row needs no privilege on the status table. The body's
-- dollar-quote tag is one no name holds (migrate chooses it). The id is
-- the text of the column's output function, as the stream sends it (a
-- char(n) keeps its padding). A status row the poller holds is skipped,
-- not waited for (the poller may be writing this outbox row, which the
-- reset holds): a reload row is added beside it.
CREATE OR REPLACE FUNCTION {{status_reset_function}}() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS {{body_tag}}
DECLARE
    row_id text;
    why constant text := 'its row was set back to a pending status: sent again, as the row is now';
BEGIN
    EXECUTE format('SELECT CASE WHEN ($1).%1$I IS NOT NULL THEN format(%2$L, ($1).%1$I) END', TG_ARGV[0], '%s')
        INTO row_id USING NEW;
    IF row_id IS NULL THEN
        RETURN NULL;
    END IF;
    UPDATE {{status}} SET status = 'FAILED', reload = true, attempts = 0, next_attempt_at = now(), updated_at = now(), last_error = why
        WHERE id IN (SELECT id FROM {{status}} WHERE source_table = TG_ARGV[1] AND event_id = row_id
            AND status IN ('FAILED', 'DEAD') FOR UPDATE SKIP LOCKED);
    IF NOT FOUND THEN
        INSERT INTO {{status}} (event_id, source_table, topic, status, reload, last_error)
            VALUES (row_id, TG_ARGV[1], '', 'FAILED', true, why);
    END IF;
    RETURN NULL;
END
{{body_tag}};
-- Only as a trigger, and only on a table whose owner may execute it: a
-- trigger fires with the function's rights whoever updates the row, so
-- PUBLIC must not be able to put it on a table of its own and write status
-- rows for any table. (The trigger's creator needs EXECUTE; firing it does
-- not.)
REVOKE ALL ON FUNCTION {{status_reset_function}}() FROM PUBLIC;
