-- The issuer's Ed25519 signing keys. The active key signs new grants; the
-- others verify the grants they signed until an admin removes them. The
-- private key is the 64-byte Ed25519 private key: keep the database file as
-- private as the server's own credentials. created_at is Unix milliseconds.
CREATE TABLE signing_keys (
    key_id      TEXT PRIMARY KEY,
    private_key BLOB    NOT NULL,
    created_at  INTEGER NOT NULL,
    active      INTEGER NOT NULL DEFAULT 0
);
