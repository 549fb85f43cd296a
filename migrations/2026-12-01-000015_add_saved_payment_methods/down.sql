ALTER TABLE users DROP COLUMN stripe_payment_method_id;
