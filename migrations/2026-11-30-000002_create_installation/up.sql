-- One random id per database, generated once. Derived gateway idempotency keys
-- include it so that two deployments sharing a gateway account never collide.
CREATE TABLE installation (
    singleton BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (singleton),
    installation_id UUID NOT NULL DEFAULT gen_random_uuid(),
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

INSERT INTO installation DEFAULT VALUES;
