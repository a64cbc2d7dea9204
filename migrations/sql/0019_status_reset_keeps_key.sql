-- The reset trigger's function (0017), keeping the event's place in its
-- key's order:
--
-- * A reset of an event parked WAITING (behind an earlier event of its
--   key) makes its row a reload row in place, as a FAILED or DEAD one:
--   the event keeps its place behind the earlier one, and is sent as its
--   outbox row now is (a topic fixed in the same UPDATE is taken), rather
--   than its parked copy.
--   A pending value set over a pending one (an application that saves
--   every column) re-arms only a row the claim has not locked: one it
--   has is left to the claim, so that the event is not sent twice.
-- * A row added for an event the status table holds but that a claim has
--   locked (the poller sending it now) takes that row's topic and record
--   key: it holds the key, as the row it supersedes did.
-- * A reset of an event an operator skipped makes it held again (it was
--   made FAILED with its skipped_at left, so that no claim took it).
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
    UPDATE {{status}} SET status = 'FAILED', reload = true, attempts = 0, next_attempt_at = now(), updated_at = now(), last_error = why, skipped_at = NULL
        WHERE id IN (SELECT id FROM {{status}} WHERE source_table = TG_ARGV[1] AND event_id = row_id
            AND status IN ('FAILED', 'DEAD', 'WAITING') FOR UPDATE SKIP LOCKED);
    IF NOT FOUND THEN
        IF TG_NARGS > 2 THEN
            EXECUTE format('SELECT ($1).%I::text', TG_ARGV[2]) INTO old_status USING OLD;
            IF old_status = ANY (TG_ARGV[3:TG_NARGS - 1]) AND NOT EXISTS (SELECT 1 FROM {{status}}
                    WHERE source_table = TG_ARGV[1] AND event_id = row_id AND status IN ('FAILED', 'DEAD')) THEN
                RETURN NULL;
            END IF;
        END IF;
        INSERT INTO {{status}} (event_id, source_table, topic, status, reload, last_error, record_key)
            SELECT row_id, TG_ARGV[1], coalesce(h.topic, ''), 'FAILED', true, why, h.record_key
            FROM (SELECT 1) AS one LEFT JOIN LATERAL (SELECT s.topic, s.record_key FROM {{status}} AS s
                WHERE s.source_table = TG_ARGV[1] AND s.event_id = row_id AND s.status IN ('FAILED', 'DEAD', 'WAITING', 'PAUSED')
                    AND s.skipped_at IS NULL
                ORDER BY s.id LIMIT 1) AS h ON true;
    END IF;
    PERFORM pg_notify('cdc_relay_due', '');
    RETURN NULL;
END
{{body_tag}};
