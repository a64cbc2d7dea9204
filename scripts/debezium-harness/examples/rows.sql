-- A few outbox rows: a JSON object, a JSON string (a text payload), unicode
-- (a character outside the BMP too) in the key and the payload, a NULL payload.
INSERT INTO outboxevent (id, aggregatetype, aggregateid, type, payload) VALUES
  ('2e9b7c1a-5d3f-4a8e-9b6c-1f0e2d3c4b5a', 'customer', '123', 'CustomerCreated',
   '{"id": 123, "name": "Jo Lindqvist", "email": "jo@example.com"}'),
  ('b8c1f0e2-6a4d-4c9b-a3e7-5d2f1c0b9a84', 'order', '1', 'OrderCreated',
   '"a text payload: a JSON string"'),
  ('7a1e5c3b-9f2d-4e6a-8b0c-3d5f7a9b1c2e', 'customer', 'Ærø-7 ☕', 'CustomerRenamed',
   '{"name":"Jö Lindqvist ☕ 😀","tags":["ünïcødé", "\u00e9"],"n":1.50}'),
  ('0c4d2b1a-3e5f-4a6b-8c7d-9e0f1a2b3c4d', 'order', '1', 'OrderDeleted', NULL);
