-- The commit path appends and never seeks. A commit used to rewrite each
-- changed resource's row and insert each event into a per-resource index:
-- one B-tree page per change in each, about 30 pages for a group commit of
-- 32 changes. Now it appends each changed row to resource_log and each
-- event to events (a few pages, all at the end of their B-trees), and a
-- fold, every few thousand events, moves the log into resources and the
-- new events into resource_events in one transaction, where many changes
-- share each page.
CREATE TABLE resource_log (
    id                INTEGER PRIMARY KEY,
    resource_id       TEXT    NOT NULL,
    last_token        INTEGER NOT NULL,
    high_water_mark   INTEGER NOT NULL,
    holder            TEXT,
    hold_count        INTEGER NOT NULL,
    grant_token       INTEGER NOT NULL,
    lease_ms          INTEGER NOT NULL,
    granted_at        INTEGER,
    expires_at        INTEGER,
    accepted          INTEGER NOT NULL,
    rejected          INTEGER NOT NULL,
    last_rejection_at INTEGER,
    counter_alarm     INTEGER NOT NULL,
    owner             TEXT    NOT NULL
);

-- A resource's own history, for events up to meta's folded_seq; later
-- events are found by scanning the (short) tail of events.
CREATE TABLE resource_events (
    resource_id TEXT    NOT NULL,
    seq         INTEGER NOT NULL,
    PRIMARY KEY (resource_id, seq)
) WITHOUT ROWID;

INSERT INTO resource_events (resource_id, seq) SELECT resource_id, seq FROM events ORDER BY resource_id, seq;
DROP INDEX events_resource_seq;
INSERT INTO meta (key, value) SELECT 'folded_seq', COALESCE(MAX(seq), 0) FROM events;
