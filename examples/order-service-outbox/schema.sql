-- The outbox of an order service (Java, Spring): every order change writes
-- its event to "outbox" in the same transaction, status NEW; a scheduled
-- publisher sent NEW rows to Kafka and set them SENT with sent_at, or FAILED
-- with error_message after five attempts.
--
-- Columns, types, constraints and index names are the service's own; it
-- gives no defaults (the service sets every value on insert).

-- The business table (illustrative).
CREATE TABLE orders (
    id          uuid          PRIMARY KEY,
    customer_id uuid          NOT NULL,
    status      varchar(50)   NOT NULL,
    total       numeric(12,2) NOT NULL,
    currency    char(3)       NOT NULL,
    created_at  timestamp     NOT NULL
);

CREATE TABLE outbox (
    id             uuid         PRIMARY KEY,
    aggregate_type varchar(255) NOT NULL,
    aggregate_id   uuid         NOT NULL,
    event_type     varchar(255) NOT NULL,
    payload        text         NOT NULL,
    status         varchar(50)  NOT NULL,
    created_at     timestamp    NOT NULL,
    sent_at        timestamp    NULL,
    error_message  text         NULL
);

CREATE INDEX idx_outbox_status_created ON outbox (status, created_at);
CREATE INDEX idx_outbox_aggregate ON outbox (aggregate_id);
