-- What the order service does: the order change and its event in one
-- transaction. The service generates the ids, puts the event id in the
-- payload as eventId, and writes its timestamps in UTC (the columns are
-- timestamp without time zone; the relay reads them as UTC).

-- Order 1 is created.
BEGIN;
INSERT INTO orders (id, customer_id, status, total, currency, created_at)
VALUES ('0b6f1d2e-3c4a-4b5d-8e6f-7a8b9c0d1e2f', '5e4d3c2b-1a09-4f8e-9d7c-6b5a4f3e2d1c', 'CREATED', 129.90, 'EUR', now() AT TIME ZONE 'UTC');
INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type, payload, status, created_at)
VALUES ('a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d', 'Order', '0b6f1d2e-3c4a-4b5d-8e6f-7a8b9c0d1e2f', 'OrderCreated',
        '{"eventId":"a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d","orderId":"0b6f1d2e-3c4a-4b5d-8e6f-7a8b9c0d1e2f","customerId":"5e4d3c2b-1a09-4f8e-9d7c-6b5a4f3e2d1c","items":[{"sku":"KB-104","quantity":1,"price":129.90}],"total":129.90,"currency":"EUR"}',
        'NEW', now() AT TIME ZONE 'UTC');
COMMIT;

-- Order 2 is created.
BEGIN;
INSERT INTO orders (id, customer_id, status, total, currency, created_at)
VALUES ('7c8d9e0f-1a2b-4c3d-9e4f-5a6b7c8d9e0f', '2f3e4d5c-6b7a-4890-a1b2-c3d4e5f6a7b8', 'CREATED', 24.50, 'EUR', now() AT TIME ZONE 'UTC');
INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type, payload, status, created_at)
VALUES ('b2c3d4e5-f6a7-4b8c-9d0e-1f2a3b4c5d6e', 'Order', '7c8d9e0f-1a2b-4c3d-9e4f-5a6b7c8d9e0f', 'OrderCreated',
        '{"eventId":"b2c3d4e5-f6a7-4b8c-9d0e-1f2a3b4c5d6e","orderId":"7c8d9e0f-1a2b-4c3d-9e4f-5a6b7c8d9e0f","customerId":"2f3e4d5c-6b7a-4890-a1b2-c3d4e5f6a7b8","items":[{"sku":"MUG-02","quantity":2,"price":12.25}],"total":24.50,"currency":"EUR"}',
        'NEW', now() AT TIME ZONE 'UTC');
COMMIT;

-- Order 1 is paid.
BEGIN;
UPDATE orders SET status = 'PAID' WHERE id = '0b6f1d2e-3c4a-4b5d-8e6f-7a8b9c0d1e2f';
INSERT INTO outbox (id, aggregate_type, aggregate_id, event_type, payload, status, created_at)
VALUES ('c3d4e5f6-a7b8-4c9d-8e0f-2a3b4c5d6e7f', 'Order', '0b6f1d2e-3c4a-4b5d-8e6f-7a8b9c0d1e2f', 'OrderPaid',
        '{"eventId":"c3d4e5f6-a7b8-4c9d-8e0f-2a3b4c5d6e7f","orderId":"0b6f1d2e-3c4a-4b5d-8e6f-7a8b9c0d1e2f","paymentReference":"PAY-20260302-0042","amount":129.90,"currency":"EUR"}',
        'NEW', now() AT TIME ZONE 'UTC');
COMMIT;
