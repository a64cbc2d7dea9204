DO {{do_tag}}
BEGIN
    -- Beside migrate's other steps, one at a time: CREATE OR REPLACE run
    -- twice at once fails with "tuple concurrently updated".
    PERFORM pg_advisory_xact_lock({{lock_key}});
    CREATE SCHEMA IF NOT EXISTS cdc_relay;
    -- Called by cdc_relay.emit only when it refuses its arguments: it
    -- raises what the refusal says (the topic checked first, then the
    -- headers), so that emit itself can be plain SQL.
    CREATE OR REPLACE FUNCTION cdc_relay.emit_refused(topic text, headers jsonb)
    RETURNS jsonb
    LANGUAGE plpgsql
    VOLATILE
    SECURITY INVOKER
    SET search_path = pg_catalog, pg_temp
    AS {{body_tag}}
    BEGIN
        IF emit_refused.topic IS NULL OR emit_refused.topic = '' THEN
            RAISE EXCEPTION 'cdc_relay.emit: the topic is %, so the event could go nowhere', coalesce(quote_literal(emit_refused.topic), 'NULL')
                USING ERRCODE = 'null_value_not_allowed', HINT = 'Pass the Kafka topic of the event as the first argument.';
        END IF;
        IF emit_refused.headers IS NOT NULL AND jsonb_typeof(emit_refused.headers) NOT IN ('object', 'null') THEN
            RAISE EXCEPTION 'cdc_relay.emit: the headers are a JSON %, not an object', jsonb_typeof(emit_refused.headers)
                USING ERRCODE = 'invalid_parameter_value', HINT = 'Pass the headers as a JSON object, such as ''{"event_type": "OrderPlaced"}'', or NULL for none.';
        END IF;
        RAISE EXCEPTION 'cdc_relay.emit_refused: called with a topic and headers that cdc_relay.emit accepts'
            USING ERRCODE = 'internal_error';
    END
    {{body_tag}};
    COMMENT ON FUNCTION cdc_relay.emit_refused(text, jsonb) IS 'Raises the error of cdc_relay.emit''s refused arguments. Created by cdc-relay migrate.';
    -- One SQL expression, which PostgreSQL inlines into the caller's
    -- query: no interpreter and no per-call SET. It is SECURITY INVOKER
    -- and every name in it is qualified with its schema (functions,
    -- operators, types), so that no object of the caller's search_path
    -- can stand in for what it calls, even though the body is parsed
    -- under the caller's search_path.
    CREATE OR REPLACE FUNCTION cdc_relay.emit(topic text, key text, payload jsonb, headers jsonb DEFAULT NULL, id text DEFAULT NULL)
    RETURNS pg_lsn
    LANGUAGE sql
    VOLATILE
    SECURITY INVOKER
    AS {{body_tag}}
    SELECT pg_catalog.pg_logical_emit_message(true, {{prefix}}, CAST(CASE
        WHEN emit.topic OPERATOR(pg_catalog.<>) '' AND pg_catalog.jsonb_typeof(emit.headers) OPERATOR(pg_catalog.=) 'object' THEN
            CASE WHEN emit.id OPERATOR(pg_catalog.<>) '' THEN
                pg_catalog.jsonb_build_object('topic', emit.topic, 'key', emit.key, 'payload', emit.payload, 'headers', emit.headers, 'id', emit.id)
            ELSE
                pg_catalog.jsonb_build_object('topic', emit.topic, 'key', emit.key, 'payload', emit.payload, 'headers', emit.headers)
            END
        WHEN emit.topic OPERATOR(pg_catalog.<>) '' AND (emit.headers IS NULL OR pg_catalog.jsonb_typeof(emit.headers) OPERATOR(pg_catalog.=) 'null') THEN
            CASE WHEN emit.id OPERATOR(pg_catalog.<>) '' THEN
                pg_catalog.jsonb_build_object('topic', emit.topic, 'key', emit.key, 'payload', emit.payload, 'id', emit.id)
            ELSE
                pg_catalog.jsonb_build_object('topic', emit.topic, 'key', emit.key, 'payload', emit.payload)
            END
        ELSE cdc_relay.emit_refused(emit.topic, emit.headers)
    END AS pg_catalog.text))
    {{body_tag}};
    COMMENT ON FUNCTION cdc_relay.emit(text, text, jsonb, jsonb, text) IS {{comment}};
END
{{do_tag}}
