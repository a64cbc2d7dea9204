DO {{do_tag}}
BEGIN
    -- Beside migrate's other steps, one at a time: CREATE OR REPLACE run
    -- twice at once fails with "tuple concurrently updated".
    PERFORM pg_advisory_xact_lock({{lock_key}});
    CREATE SCHEMA IF NOT EXISTS cdc_relay;
    -- cdc_relay.emit's checks: each raises what its refusal says, called
    -- by the CHECK of a domain that emit casts its argument to, and only
    -- when the value is refused. A domain's cast checks the value it
    -- computed once, so that emit is plain SQL that evaluates each
    -- argument once (the argument may be an expression, such as a
    -- jsonb_build_object of the headers).
    CREATE OR REPLACE FUNCTION cdc_relay.emit_refused_topic(topic text)
    RETURNS boolean
    LANGUAGE plpgsql
    VOLATILE
    SECURITY INVOKER
    SET search_path = pg_catalog, pg_temp
    AS {{body_tag}}
    BEGIN
        RAISE EXCEPTION 'cdc_relay.emit: the topic is %, so the event could go nowhere', coalesce(quote_literal(emit_refused_topic.topic), 'NULL')
            USING ERRCODE = 'null_value_not_allowed', HINT = 'Pass the Kafka topic of the event as the first argument.';
    END
    {{body_tag}};
    COMMENT ON FUNCTION cdc_relay.emit_refused_topic(text) IS 'Raises cdc_relay.emit''s refusal of a NULL or empty topic. Created by cdc-relay migrate.';
    CREATE OR REPLACE FUNCTION cdc_relay.emit_refused_headers(headers jsonb)
    RETURNS boolean
    LANGUAGE plpgsql
    VOLATILE
    SECURITY INVOKER
    SET search_path = pg_catalog, pg_temp
    AS {{body_tag}}
    BEGIN
        RAISE EXCEPTION 'cdc_relay.emit: the headers are a JSON %, not an object', jsonb_typeof(emit_refused_headers.headers)
            USING ERRCODE = 'invalid_parameter_value', HINT = 'Pass the headers as a JSON object, such as ''{"event_type": "OrderPlaced"}'', or NULL for none.';
    END
    {{body_tag}};
    COMMENT ON FUNCTION cdc_relay.emit_refused_headers(jsonb) IS 'Raises cdc_relay.emit''s refusal of headers that are not a JSON object. Created by cdc-relay migrate.';
    -- The domains' CHECKs are stored as parsed, so no caller's search_path
    -- reaches them. A NULL topic fails its CHECK too: NULL <> '' is NULL,
    -- and NULL OR the refusal calls the refusal.
    IF pg_catalog.to_regtype('cdc_relay.emit_topic') IS NULL THEN
        CREATE DOMAIN cdc_relay.emit_topic AS pg_catalog.text
            CONSTRAINT emit_topic_named CHECK (VALUE OPERATOR(pg_catalog.<>) '' OR cdc_relay.emit_refused_topic(VALUE));
        COMMENT ON DOMAIN cdc_relay.emit_topic IS 'The topic argument of cdc_relay.emit: neither NULL nor empty. Created by cdc-relay migrate.';
    END IF;
    IF pg_catalog.to_regtype('cdc_relay.emit_headers') IS NULL THEN
        CREATE DOMAIN cdc_relay.emit_headers AS pg_catalog.jsonb
            CONSTRAINT emit_headers_object CHECK (VALUE IS NULL OR pg_catalog.jsonb_typeof(VALUE) OPERATOR(pg_catalog.=) ANY (ARRAY['object', 'null'])
                OR cdc_relay.emit_refused_headers(VALUE));
        COMMENT ON DOMAIN cdc_relay.emit_headers IS 'The headers argument of cdc_relay.emit: a JSON object, JSON null or NULL. Created by cdc-relay migrate.';
    END IF;
    -- One SQL expression, which PostgreSQL inlines into the caller's
    -- query: no interpreter and no per-call SET, each argument evaluated
    -- once. It is SECURITY INVOKER and every name in it is qualified with
    -- its schema (functions, operators, types), so that no object of the
    -- caller's search_path can stand in for what it calls, even though
    -- the body is parsed under the caller's search_path. The headers go
    -- in only when they are an object: jsonb_set_lax deletes the member
    -- for a NULL, which the path query makes of a JSON null.
    CREATE OR REPLACE FUNCTION cdc_relay.emit(topic text, key text, payload jsonb, headers jsonb DEFAULT NULL, id text DEFAULT NULL)
    RETURNS pg_lsn
    LANGUAGE sql
    VOLATILE
    SECURITY INVOKER
    AS {{body_tag}}
    SELECT pg_catalog.pg_logical_emit_message(true, {{prefix}}, CAST(pg_catalog.jsonb_set_lax(
        CASE WHEN emit.id OPERATOR(pg_catalog.<>) '' THEN
            pg_catalog.jsonb_build_object('topic', CAST(emit.topic AS cdc_relay.emit_topic), 'key', emit.key, 'payload', emit.payload, 'id', emit.id)
        ELSE
            pg_catalog.jsonb_build_object('topic', CAST(emit.topic AS cdc_relay.emit_topic), 'key', emit.key, 'payload', emit.payload)
        END,
        CAST('{headers}' AS pg_catalog.text[]),
        pg_catalog.jsonb_path_query_first(CAST(emit.headers AS cdc_relay.emit_headers), CAST('strict $ ? (@.type() == "object")' AS pg_catalog.jsonpath)),
        true, 'delete_key') AS pg_catalog.text))
    {{body_tag}};
    COMMENT ON FUNCTION cdc_relay.emit(text, text, jsonb, jsonb, text) IS {{comment}};
    -- The single check of earlier versions, which the body above no
    -- longer calls.
    DROP FUNCTION IF EXISTS cdc_relay.emit_refused(text, jsonb);
END
{{do_tag}}
