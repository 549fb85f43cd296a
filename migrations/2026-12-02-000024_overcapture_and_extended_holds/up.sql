-- What a hold lets be captured without asking the card again (more than
-- the hold when the card allows overcapture), and when it lapses (seven
-- days, up to 30 when extended): both NULL once the ride is no longer held.
ALTER TABLE rides ADD COLUMN amount_capturable_max_cents bigint;
ALTER TABLE rides ADD COLUMN hold_expires_at timestamptz;
