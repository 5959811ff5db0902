-- A fenced write appends one row, its event, instead of a resource_log row
-- and an event: the event carries what a fence changes on its resource
-- (the mark, the last token, the counters, the last rejection, the alarm),
-- set only when no resource_log row was written for it (NULL otherwise).
-- resource_log's seq is the last event seq when its row was written, so
-- readers and the fold take whichever of the two is newer. Rows logged
-- before this migration keep seq 0 and no event carries a state yet: they
-- read as before.
ALTER TABLE resource_log ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
-- The state is one JSON array, [mark, last token, accepted, rejected, last
-- rejection (Unix ms or null), counter alarm], so that every other event
-- pays one byte (its NULL) for it, not six.
ALTER TABLE events ADD COLUMN resource_state TEXT;
