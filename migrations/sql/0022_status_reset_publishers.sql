-- The reset trigger's function (0019), for tables whose events go to
-- publishers beside Kafka (issue 48): a reset sends the event again to
-- every publisher, each from a row of its own. The trigger of such a
-- table passes, after its other arguments, one that names them
-- ('cdc-relay publishers: kafka,partner'); for each, the function re-arms
-- that publisher's parked rows of the event, or adds a reload row of that
-- publisher, as 0019 did for Kafka's. A trigger without that argument (a
-- table only Kafka sends) works as before: it re-arms the event's parked
-- rows, and adds Kafka's reload row.
CREATE OR REPLACE FUNCTION {{status_reset_function}}() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS {{body_tag}}
DECLARE
    row_id text;
    old_status text;
    why constant text := 'its row was set back to a pending status: sent again, as the row is now';
    marker constant text := 'cdc-relay publishers: ';
    nargs int := TG_NARGS;
    pubs text[] := ARRAY[NULL]::text[];
    pub text;
BEGIN
    IF current_setting({{own_write_literal}}, true) = 'on' THEN
        RETURN NULL;
    END IF;
    IF nargs > 2 AND starts_with(TG_ARGV[nargs - 1], marker) THEN
        pubs := string_to_array(substr(TG_ARGV[nargs - 1], length(marker) + 1), ',');
        nargs := nargs - 1;
    END IF;
    EXECUTE format('SELECT CASE WHEN ($1).%1$I IS NOT NULL THEN format(%2$L, ($1).%1$I) END', TG_ARGV[0], '%s')
        INTO row_id USING NEW;
    IF row_id IS NULL THEN
        RETURN NULL;
    END IF;
    IF nargs > 2 THEN
        EXECUTE format('SELECT ($1).%I::text', TG_ARGV[2]) INTO old_status USING OLD;
    END IF;
    -- pub NULL: any publisher's parked rows, and Kafka's reload row.
    FOREACH pub IN ARRAY pubs LOOP
        UPDATE {{status}} SET status = 'FAILED', reload = true, attempts = 0, next_attempt_at = now(), updated_at = now(), last_error = why, skipped_at = NULL
            WHERE id IN (SELECT id FROM {{status}} WHERE source_table = TG_ARGV[1] AND event_id = row_id
                AND (pub IS NULL OR publisher = pub) AND status IN ('FAILED', 'DEAD', 'WAITING') FOR UPDATE SKIP LOCKED);
        CONTINUE WHEN FOUND;
        IF nargs > 2 AND old_status = ANY (TG_ARGV[3:nargs - 1]) AND NOT EXISTS (SELECT 1 FROM {{status}}
                WHERE source_table = TG_ARGV[1] AND event_id = row_id AND (pub IS NULL OR publisher = pub) AND status IN ('FAILED', 'DEAD')) THEN
            CONTINUE;
        END IF;
        INSERT INTO {{status}} (event_id, source_table, topic, status, reload, last_error, record_key, publisher)
            SELECT row_id, TG_ARGV[1], coalesce(h.topic, ''), 'FAILED', true, why, h.record_key, coalesce(pub, 'kafka')
            FROM (SELECT 1) AS one LEFT JOIN LATERAL (SELECT s.topic, s.record_key FROM {{status}} AS s
                WHERE s.source_table = TG_ARGV[1] AND s.event_id = row_id AND (pub IS NULL OR s.publisher = pub)
                    AND s.status IN ('FAILED', 'DEAD', 'WAITING', 'PAUSED') AND s.skipped_at IS NULL
                ORDER BY s.id LIMIT 1) AS h ON true;
    END LOOP;
    PERFORM pg_notify('cdc_relay_due', '');
    RETURN NULL;
END
{{body_tag}};
