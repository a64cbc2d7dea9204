-- The reset trigger's function (0016) leaves alone the relay's own
-- write-back of a pending status value: a table whose write_back sets
-- `retrying` to one of its pending values (a poller that kept a row
-- PENDING with a retry count while it retried) has the relay write that
-- value while it tries an event again, and the trigger must not take the
-- write for a runbook's reset. The relay marks such a statement's
-- transaction with the transaction-local setting cdc_relay.own_write
-- (OwnWriteSetting); nothing else sets it.
CREATE OR REPLACE FUNCTION {{status_reset_function}}() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS {{body_tag}}
DECLARE
    row_id text;
    why constant text := 'its row was set back to a pending status: sent again, as the row is now';
BEGIN
    IF current_setting({{own_write_literal}}, true) = 'on' THEN
        RETURN NULL;
    END IF;
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
    PERFORM pg_notify('cdc_relay_due', '');
    RETURN NULL;
END
{{body_tag}};
