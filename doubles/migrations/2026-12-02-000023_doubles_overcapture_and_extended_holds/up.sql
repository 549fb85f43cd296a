-- What a hold lets be captured when its card allows overcapture (NULL when
-- it does not, or was not asked); an extended hold is one whose
-- authorization_expires_at is further off.
ALTER TABLE simulated_payment_intents ADD COLUMN overcapture_max_cents bigint;
