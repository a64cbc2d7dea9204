-- The outbox of a logistics order service (Node.js, NestJS): each order or
-- shipment change writes its event to "outbox_events" in the same
-- transaction; a worker polled PENDING rows that were due (next_attempt_at),
-- sent them, and set them PUBLISHED with processed_at, or back to PENDING
-- with an exponential next_attempt_at, and FAILED after its last retry.
--
-- Columns, types, defaults, the primary key's and the indexes' names are the
-- service's own. id has no default: the service generates it and puts it in
-- the payload as messageId.

-- The business tables (illustrative).
CREATE TABLE orders (
    id               uuid        PRIMARY KEY,
    customer_id      uuid        NOT NULL,
    status           varchar(30) NOT NULL,
    pickup_address   text        NOT NULL,
    delivery_address text        NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE shipments (
    id              uuid        PRIMARY KEY,
    order_id        uuid        NOT NULL REFERENCES orders (id),
    carrier         varchar(50) NOT NULL,
    tracking_number varchar(50) NOT NULL,
    status          varchar(30) NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE outbox_events (
    id              uuid         NOT NULL,
    aggregate_type  varchar(50)  NOT NULL,
    aggregate_id    uuid         NOT NULL,
    event_type      varchar(100) NOT NULL,
    payload         jsonb        NOT NULL,
    occurred_at     timestamptz  DEFAULT now(),
    status          varchar(20)  DEFAULT 'PENDING',
    retry_count     int          DEFAULT 0,
    next_attempt_at timestamptz  DEFAULT now(),
    last_error      text         NULL,
    processed_at    timestamptz  NULL,
    CONSTRAINT pk_outbox_id PRIMARY KEY (id)
);

CREATE INDEX idx_outbox_poll ON outbox_events (status, next_attempt_at ASC);
CREATE INDEX idx_outbox_aggregate ON outbox_events (aggregate_type, aggregate_id);
