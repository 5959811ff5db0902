-- The rejection history pages newest first by time, then by sequence number
-- (reported decisions carry their own time). Every filter gets an index in
-- that order, so time ranges and deep pages cost about one page.
DROP INDEX rejections_seq;
DROP INDEX rejections_resource_seq;
DROP INDEX rejections_reason_seq;
DROP INDEX rejections_source_seq;
DROP INDEX rejections_at;
CREATE INDEX rejections_at_seq ON events (at, seq) WHERE type = 'reject';
CREATE INDEX rejections_resource_at_seq ON events (resource_id, at, seq) WHERE type = 'reject';
CREATE INDEX rejections_reason_at_seq ON events (reason, at, seq) WHERE type = 'reject';
CREATE INDEX rejections_source_at_seq ON events (source, at, seq) WHERE type = 'reject';
