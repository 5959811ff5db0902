-- With auth on, the key that holds a lock (beside the holder name), so a
-- restart keeps others from releasing it. '' when auth is off.
ALTER TABLE resources ADD COLUMN owner TEXT NOT NULL DEFAULT '';
