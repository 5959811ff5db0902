-- Shared (read) holds and reads. A lock held in shared mode keeps every reader's
-- hold in readers, a JSON array (see internal/sqlite/readers.go); '' when
-- the lock is exclusive or free. Resource rows carried by events hold it
-- as their 19th element (resourceRow).
ALTER TABLE resources ADD COLUMN readers TEXT NOT NULL DEFAULT '';
ALTER TABLE resource_log ADD COLUMN readers TEXT NOT NULL DEFAULT '';

-- Reads fenced by the server or reported by guards: an accept or reject
-- event's access is 'read' for a read, '' for a write (and every other
-- event).
ALTER TABLE events ADD COLUMN access TEXT NOT NULL DEFAULT '';
