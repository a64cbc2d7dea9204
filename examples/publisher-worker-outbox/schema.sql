-- The outbox module of a chat service (Node.js, NestJS): the service writes
-- each record to "outbox" with its topic, key and idempotency key in the same
-- transaction as the domain change; a batch worker claimed pending and due
-- failed rows (publishing), sent them, and set them published with
-- published_at, or failed with last_error and a next_attempt_at backoff, and
-- dead_lettered after its last retry.
--
-- The design lists the columns, the states and the unique (topic,
-- idempotency_key); their types, defaults and index names are not given:
-- each is marked "chosen", with what a NestJS service using TypeORM would
-- create.

-- chosen: a PostgreSQL enum, as TypeORM creates for an enum column (named <table>_<column>_enum).
CREATE TYPE outbox_status_enum AS ENUM ('pending', 'publishing', 'published', 'failed', 'dead_lettered');

-- The business tables (illustrative).
CREATE TABLE conversations (
    id         uuid         PRIMARY KEY DEFAULT gen_random_uuid(),
    title      varchar(200) NOT NULL,
    created_by uuid         NOT NULL,
    created_at timestamptz  NOT NULL DEFAULT now()
);
CREATE TABLE messages (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    conversation_id uuid        NOT NULL REFERENCES conversations (id),
    sender_id       uuid        NOT NULL,
    body            text        NOT NULL,
    sent_at         timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE outbox (
    id              uuid               PRIMARY KEY DEFAULT gen_random_uuid(), -- chosen: uuid (TypeORM @PrimaryGeneratedColumn('uuid')); the design lists no id
    topic           varchar(255)       NOT NULL,                  -- chosen: varchar(255), set by the service
    key             varchar(255)       NULL,                      -- chosen: varchar(255), nullable (a record may have no key)
    payload_json    jsonb              NOT NULL,                  -- chosen: jsonb
    idempotency_key varchar(255)       NOT NULL,                  -- chosen: varchar(255)
    status          outbox_status_enum NOT NULL DEFAULT 'pending', -- chosen: the enum above, pending on insert
    retry_count     integer            NOT NULL DEFAULT 0,        -- chosen: integer, 0 on insert
    last_error      text               NULL,                      -- chosen: text
    last_attempt_at timestamptz        NULL,                      -- chosen: timestamptz
    next_attempt_at timestamptz        NOT NULL DEFAULT now(),    -- chosen: timestamptz, due at once
    published_at    timestamptz        NULL,                      -- chosen: timestamptz
    created_at      timestamptz        NOT NULL DEFAULT now(),    -- chosen: timestamptz (TypeORM @CreateDateColumn)
    CONSTRAINT uq_outbox_topic_idempotency_key UNIQUE (topic, idempotency_key) -- name chosen
);

-- chosen: the design says only that indexes serve batch selection (pending
-- and failed rows by next_attempt_at) and the dead-letter scan (failed and
-- dead_lettered rows by next_attempt_at); this one serves both.
CREATE INDEX idx_outbox_status_next_attempt ON outbox (status, next_attempt_at);
