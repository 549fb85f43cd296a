-- An append-only trail of what ridepay did on a user's behalf.
CREATE TABLE audit_records (
    id BIGSERIAL PRIMARY KEY,
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    action TEXT NOT NULL CHECK (action ~ '^[a-z_]+\.[a-z_]+$'),
    resource_type TEXT NOT NULL CHECK (char_length(resource_type) BETWEEN 1 AND 64),
    resource_id BIGINT NOT NULL,
    data JSONB NOT NULL DEFAULT '{}',
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE INDEX audit_records_resource ON audit_records (resource_type, resource_id);
