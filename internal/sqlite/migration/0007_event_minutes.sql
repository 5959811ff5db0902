-- Events counted per minute, type and (for rejections) reason, kept in the
-- same transaction as the events: the dashboard's rates over an hour, a
-- day or a week read at most 10,080 minutes of a few rows each, however
-- long the history.
CREATE TABLE event_minutes (
	minute INTEGER NOT NULL, -- Unix milliseconds / 60000
	type   TEXT    NOT NULL,
	reason TEXT    NOT NULL DEFAULT '',
	n      INTEGER NOT NULL,
	PRIMARY KEY (minute, type, reason)
) WITHOUT ROWID;

INSERT INTO event_minutes (minute, type, reason, n)
	SELECT at / 60000, type, CASE WHEN type = 'reject' THEN reason ELSE '' END, COUNT(*)
	FROM events GROUP BY 1, 2, 3;
