-- API keys. Only the SHA-256 of a key's secret is kept: the secret is shown
-- once, when the key is made. resources is a JSON array of id prefixes.
CREATE TABLE auth_keys (
    id          TEXT PRIMARY KEY,
    name        TEXT    NOT NULL,
    role        TEXT    NOT NULL,
    resources   TEXT    NOT NULL DEFAULT '[]',
    secret_hash BLOB    NOT NULL,
    created_at  INTEGER NOT NULL
);
