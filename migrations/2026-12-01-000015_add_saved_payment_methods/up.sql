-- A user's saved card: the PaymentIntent's `payment_method` when a ride
-- names none (`users create --stripe-customer C --payment-method P`).
ALTER TABLE users ADD COLUMN stripe_payment_method_id TEXT
    CHECK (stripe_payment_method_id ~ '^pm_[A-Za-z0-9_]{1,252}$');
