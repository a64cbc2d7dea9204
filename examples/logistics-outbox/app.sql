-- What the logistics service does: the order or shipment change and its
-- events in one transaction. The service generates each event id and puts
-- it in the payload as messageId.

-- An order is placed.
BEGIN;
INSERT INTO orders (id, customer_id, status, pickup_address, delivery_address)
VALUES ('3f2a1b0c-9d8e-4f7a-b6c5-d4e3f2a1b0c9', 'e8d7c6b5-a4f3-4e2d-9c1b-0a9f8e7d6c5b', 'PLACED',
        'Warehouse 4, Industrieweg 12, Rotterdam', 'Kaiserstrasse 7, 60311 Frankfurt');
INSERT INTO outbox_events (id, aggregate_type, aggregate_id, event_type, payload)
VALUES ('11111111-2222-4333-8444-555555555501', 'Order', '3f2a1b0c-9d8e-4f7a-b6c5-d4e3f2a1b0c9', 'OrderPlaced',
        '{"messageId": "11111111-2222-4333-8444-555555555501", "orderId": "3f2a1b0c-9d8e-4f7a-b6c5-d4e3f2a1b0c9", "customerId": "e8d7c6b5-a4f3-4e2d-9c1b-0a9f8e7d6c5b", "pickup": "Warehouse 4, Industrieweg 12, Rotterdam", "delivery": "Kaiserstrasse 7, 60311 Frankfurt", "parcels": 2}');
COMMIT;

-- A shipment is booked for it, and the order is dispatched: two events.
BEGIN;
INSERT INTO shipments (id, order_id, carrier, tracking_number, status)
VALUES ('6c5b4a39-2817-4f6e-8d5c-4b3a29180f7e', '3f2a1b0c-9d8e-4f7a-b6c5-d4e3f2a1b0c9', 'DHL', 'JJD000390007762314', 'BOOKED');
UPDATE orders SET status = 'DISPATCHED' WHERE id = '3f2a1b0c-9d8e-4f7a-b6c5-d4e3f2a1b0c9';
INSERT INTO outbox_events (id, aggregate_type, aggregate_id, event_type, payload) VALUES
    ('11111111-2222-4333-8444-555555555502', 'Shipment', '6c5b4a39-2817-4f6e-8d5c-4b3a29180f7e', 'ShipmentBooked',
     '{"messageId": "11111111-2222-4333-8444-555555555502", "shipmentId": "6c5b4a39-2817-4f6e-8d5c-4b3a29180f7e", "orderId": "3f2a1b0c-9d8e-4f7a-b6c5-d4e3f2a1b0c9", "carrier": "DHL", "trackingNumber": "JJD000390007762314"}'),
    ('11111111-2222-4333-8444-555555555503', 'Order', '3f2a1b0c-9d8e-4f7a-b6c5-d4e3f2a1b0c9', 'OrderDispatched',
     '{"messageId": "11111111-2222-4333-8444-555555555503", "orderId": "3f2a1b0c-9d8e-4f7a-b6c5-d4e3f2a1b0c9", "shipmentId": "6c5b4a39-2817-4f6e-8d5c-4b3a29180f7e"}');
COMMIT;

-- The shipment is delivered.
BEGIN;
UPDATE shipments SET status = 'DELIVERED' WHERE id = '6c5b4a39-2817-4f6e-8d5c-4b3a29180f7e';
INSERT INTO outbox_events (id, aggregate_type, aggregate_id, event_type, payload)
VALUES ('11111111-2222-4333-8444-555555555504', 'Shipment', '6c5b4a39-2817-4f6e-8d5c-4b3a29180f7e', 'ShipmentDelivered',
        '{"messageId": "11111111-2222-4333-8444-555555555504", "shipmentId": "6c5b4a39-2817-4f6e-8d5c-4b3a29180f7e", "signedBy": "M. Keller", "deliveredAt": "2026-03-04T14:12:00Z"}');
COMMIT;
