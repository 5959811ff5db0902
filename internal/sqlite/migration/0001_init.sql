-- Facts about this server that must outlive it, such as its issuer id.
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- One row per resource: its lock, the last token issued and the highest
-- token a guard accepted. Times are Unix milliseconds.
CREATE TABLE resources (
    resource_id       TEXT PRIMARY KEY,
    last_token        INTEGER NOT NULL DEFAULT 0,
    high_water_mark   INTEGER NOT NULL DEFAULT 0,
    holder            TEXT,
    hold_count        INTEGER NOT NULL DEFAULT 0,
    grant_token       INTEGER NOT NULL DEFAULT 0,
    lease_ms          INTEGER NOT NULL DEFAULT 0,
    granted_at        INTEGER,
    expires_at        INTEGER,
    accepted          INTEGER NOT NULL DEFAULT 0,
    rejected          INTEGER NOT NULL DEFAULT 0,
    last_rejection_at INTEGER
);

-- The history: every grant, renew, release, expiry and fencing decision.
-- seq is assigned by the server and strictly increases across restarts.
CREATE TABLE events (
    seq         INTEGER PRIMARY KEY,
    type        TEXT    NOT NULL,
    resource_id TEXT    NOT NULL,
    token       INTEGER NOT NULL DEFAULT 0,
    holder      TEXT    NOT NULL DEFAULT '',
    presented   INTEGER NOT NULL DEFAULT 0,
    required    INTEGER NOT NULL DEFAULT 0,
    reason      TEXT    NOT NULL DEFAULT '',
    source      TEXT    NOT NULL DEFAULT '',
    at          INTEGER NOT NULL
);

-- A resource's own history, and resuming the stream for one resource.
CREATE INDEX events_resource_seq ON events (resource_id, seq);

-- Rejection history queries page newest-first by seq; each filter has an
-- index that yields rows already in that order.
CREATE INDEX rejections_seq ON events (seq) WHERE type = 'reject';
CREATE INDEX rejections_resource_seq ON events (resource_id, seq) WHERE type = 'reject';
CREATE INDEX rejections_reason_seq ON events (reason, seq) WHERE type = 'reject';
CREATE INDEX rejections_source_seq ON events (source, seq) WHERE type = 'reject';
CREATE INDEX rejections_at ON events (at, seq) WHERE type = 'reject';
