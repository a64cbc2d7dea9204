-- What an application built for Debezium does: the change and its outbox
-- row in one transaction.

-- A customer signs up.
BEGIN;
INSERT INTO customers (id, name, email) VALUES (123, 'Jo Lindqvist', 'jo@example.com');
INSERT INTO outboxevent (id, aggregatetype, aggregateid, type, payload)
VALUES ('2e9b7c1a-5d3f-4a8e-9b6c-1f0e2d3c4b5a', 'customer', '123', 'CustomerCreated',
        '{"id": 123, "name": "Jo Lindqvist", "email": "jo@example.com"}');
COMMIT;

-- The customer places an order.
BEGIN;
INSERT INTO purchase_orders (id, customer_id, total) VALUES (1, 123, 69.97);
INSERT INTO outboxevent (id, aggregatetype, aggregateid, type, payload)
VALUES ('b8c1f0e2-6a4d-4c9b-a3e7-5d2f1c0b9a84', 'order', '1', 'OrderCreated',
        '{"id": 1, "customerId": 123, "lines": [{"id": 1, "sku": "TEA-GREEN-250", "quantity": 2, "price": 19.99}, {"id": 2, "sku": "POT-CAST-1L", "quantity": 1, "price": 29.99}]}');
COMMIT;

-- An order line is cancelled. This application deletes the outbox row in the
-- same transaction, as Debezium's Quarkus extension does by default
-- (remove-after-insert), so the table stays empty: the relay still sends the
-- event, because the publication publishes the insert, and the delete is not
-- published.
BEGIN;
UPDATE purchase_orders SET total = 39.98 WHERE id = 1;
INSERT INTO outboxevent (id, aggregatetype, aggregateid, type, payload)
VALUES ('7a1e5c3b-9f2d-4e6a-8b0c-3d5f7a9b1c2e', 'order', '1', 'OrderLineUpdated',
        '{"orderId": 1, "orderLineId": 2, "oldStatus": "ENTERED", "newStatus": "CANCELLED"}');
DELETE FROM outboxevent WHERE id = '7a1e5c3b-9f2d-4e6a-8b0c-3d5f7a9b1c2e';
COMMIT;
