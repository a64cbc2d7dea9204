DO {{do_tag}}
BEGIN
    -- Beside migrate's other steps, one at a time: CREATE OR REPLACE run
    -- twice at once fails with "tuple concurrently updated".
    PERFORM pg_advisory_xact_lock({{lock_key}});
    CREATE SCHEMA IF NOT EXISTS cdc_relay;
    CREATE OR REPLACE FUNCTION cdc_relay.emit(topic text, key text, payload jsonb, headers jsonb DEFAULT NULL, id text DEFAULT NULL)
    RETURNS pg_lsn
    LANGUAGE plpgsql
    VOLATILE
    SECURITY INVOKER
    SET search_path = pg_catalog, pg_temp
    AS {{body_tag}}
    DECLARE
        envelope jsonb;
    BEGIN
        IF emit.topic IS NULL OR emit.topic = '' THEN
            RAISE EXCEPTION 'cdc_relay.emit: the topic is %, so the event could go nowhere', coalesce(quote_literal(emit.topic), 'NULL')
                USING ERRCODE = 'null_value_not_allowed', HINT = 'Pass the Kafka topic of the event as the first argument.';
        END IF;
        IF emit.headers IS NOT NULL AND jsonb_typeof(emit.headers) NOT IN ('object', 'null') THEN
            RAISE EXCEPTION 'cdc_relay.emit: the headers are a JSON %, not an object', jsonb_typeof(emit.headers)
                USING ERRCODE = 'invalid_parameter_value', HINT = 'Pass the headers as a JSON object, such as ''{"event_type": "OrderPlaced"}'', or NULL for none.';
        END IF;
        envelope := jsonb_build_object('topic', emit.topic, 'key', emit.key, 'payload', emit.payload);
        IF jsonb_typeof(emit.headers) = 'object' THEN
            envelope := envelope || jsonb_build_object('headers', emit.headers);
        END IF;
        IF nullif(emit.id, '') IS NOT NULL THEN
            envelope := envelope || jsonb_build_object('id', emit.id);
        END IF;
        RETURN pg_logical_emit_message(true, {{prefix}}, envelope::text);
    END
    {{body_tag}};
    COMMENT ON FUNCTION cdc_relay.emit(text, text, jsonb, jsonb, text) IS {{comment}};
END
{{do_tag}}
