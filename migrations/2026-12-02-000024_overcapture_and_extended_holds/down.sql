ALTER TABLE rides DROP COLUMN hold_expires_at;
ALTER TABLE rides DROP COLUMN amount_capturable_max_cents;
