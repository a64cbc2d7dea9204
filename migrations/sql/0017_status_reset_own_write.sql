-- The reset trigger's function (0016), for tables whose write_back sets
-- `retrying` to one of their pending values (a poller that kept a row
-- PENDING with a retry count while it retried):
--
-- * It leaves alone the relay's own write-back of a pending value. The
--   relay marks such a statement's transaction with the transaction-local
--   setting {{own_write_literal}} (OwnWriteSetting); nothing else sets it.
-- * Their trigger fires on a pending value set over a pending one too, so
--   that a runbook's reset of a row being tried again is seen; it then
--   passes the status column and the pending values after the id column
--   and the table (Reset.FromPending). Such an UPDATE re-arms an event the
--   relay parked (FAILED or DEAD); one the relay never parked (an
--   application that sets the status of a row it just inserted, a row the
--   stream still carries) is left to the stream: no reload row, no second
--   copy.
CREATE OR REPLACE FUNCTION {{status_reset_function}}() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS {{body_tag}}
DECLARE
    row_id text;
    old_status text;
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
        IF TG_NARGS > 2 THEN
            EXECUTE format('SELECT ($1).%I::text', TG_ARGV[2]) INTO old_status USING OLD;
            IF old_status = ANY (TG_ARGV[3:TG_NARGS - 1]) AND NOT EXISTS (SELECT 1 FROM {{status}}
                    WHERE source_table = TG_ARGV[1] AND event_id = row_id AND status IN ('FAILED', 'DEAD')) THEN
                RETURN NULL;
            END IF;
        END IF;
        INSERT INTO {{status}} (event_id, source_table, topic, status, reload, last_error)
            VALUES (row_id, TG_ARGV[1], '', 'FAILED', true, why);
    END IF;
    PERFORM pg_notify('cdc_relay_due', '');
    RETURN NULL;
END
{{body_tag}};
