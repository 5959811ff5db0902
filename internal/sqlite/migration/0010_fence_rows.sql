-- A fenced write appends one row, its event, instead of a resource_log row
-- and an event: the event carries what a fence changes on its resource
-- (the mark, the last token, the counters, the last rejection, the alarm),
-- set only when no resource_log row was written for it (NULL otherwise).
-- resource_log's seq is the last event seq when its row was written, so
-- readers and the fold take whichever of the two is newer. Rows logged
-- before this migration keep seq 0 and no event carries a state yet: they
-- read as before.
ALTER TABLE resource_log ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE events ADD COLUMN r_mark INTEGER;
ALTER TABLE events ADD COLUMN r_last_token INTEGER;
ALTER TABLE events ADD COLUMN r_accepted INTEGER;
ALTER TABLE events ADD COLUMN r_rejected INTEGER;
ALTER TABLE events ADD COLUMN r_last_rejection_at INTEGER;
ALTER TABLE events ADD COLUMN r_counter_alarm INTEGER;
