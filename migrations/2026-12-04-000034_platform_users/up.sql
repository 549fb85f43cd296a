-- The platform's own users beside riders: a platform key reads every ride,
-- and (with the ledger and the drivers) reaches the platform's routes; it
-- makes no ride.
ALTER TABLE users ADD COLUMN role TEXT NOT NULL DEFAULT 'rider'
    CHECK (role IN ('rider', 'platform'));
