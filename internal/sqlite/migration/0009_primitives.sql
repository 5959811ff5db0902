-- Contract v3: a lock-delay (its length for the current grant, and when a
-- running one ends), a semaphore's permits (kept on its slot 0), an
-- election's flag and leader value; events carry an election's value, the
-- lock-delay an expiry starts and a semaphore's new permits.
ALTER TABLE resources ADD COLUMN lock_delay_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE resources ADD COLUMN available_at INTEGER;
ALTER TABLE resources ADD COLUMN permits INTEGER NOT NULL DEFAULT 0;
ALTER TABLE resources ADD COLUMN election INTEGER NOT NULL DEFAULT 0;
ALTER TABLE resources ADD COLUMN value TEXT NOT NULL DEFAULT '';
ALTER TABLE resource_log ADD COLUMN lock_delay_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE resource_log ADD COLUMN available_at INTEGER;
ALTER TABLE resource_log ADD COLUMN permits INTEGER NOT NULL DEFAULT 0;
ALTER TABLE resource_log ADD COLUMN election INTEGER NOT NULL DEFAULT 0;
ALTER TABLE resource_log ADD COLUMN value TEXT NOT NULL DEFAULT '';
ALTER TABLE events ADD COLUMN value TEXT NOT NULL DEFAULT '';
ALTER TABLE events ADD COLUMN lock_delay_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE events ADD COLUMN permits INTEGER NOT NULL DEFAULT 0;
