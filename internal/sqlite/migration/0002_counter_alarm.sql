-- The high-water mark that revealed this server's token counter behind the
-- tokens in use (a restored database, a plugin's higher mark), kept until an
-- admin resets the counter deliberately. 0 when there is no alarm.
ALTER TABLE resources ADD COLUMN counter_alarm INTEGER NOT NULL DEFAULT 0;
