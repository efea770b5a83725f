-- distlock's lock table for PostgreSQL. Applied by distlock.jdbc.initialize-schema=always, or by hand (Flyway,
-- Liquibase, a DBA). With distlock.jdbc.table-name, replace distlock_lock with that name (the initializer does).
-- One row per key ever locked: a released lock keeps its row, marked free (owner NULL), so that its fencing token
-- keeps growing.
CREATE TABLE IF NOT EXISTS distlock_lock (
    -- the full lock key, prefix included
    lock_key   VARCHAR(255) NOT NULL PRIMARY KEY,
    -- '<instance>:<owner id>' while held, NULL when free
    owner      VARCHAR(64),
    -- the instance that renews a watchdog lock; NULL for a fixed lease and when free
    instance   VARCHAR(36),
    -- when the lock expires (while held) or was released (when free): epoch microseconds by the database's clock
    expires_at BIGINT NOT NULL,
    -- the latest fencing token issued for this key
    token      BIGINT NOT NULL,
    -- why the key is closed (every acquisition fails at once), NULL while open
    closed     VARCHAR(255)
);
-- the watchdog's renewal: one UPDATE per instance and period finds that instance's rows
CREATE INDEX IF NOT EXISTS distlock_lock_instance ON distlock_lock (instance);
-- the instances sharing the table, as each announced itself: read by the lookup of a key's holders, renewed with the
-- instance's watchdog, ignored once expired (a dead instance is not named)
CREATE TABLE IF NOT EXISTS distlock_lock_peers (
    -- the instance part of the owners it writes
    instance    VARCHAR(36) NOT NULL PRIMARY KEY,
    application VARCHAR(255) NOT NULL,
    host        VARCHAR(255) NOT NULL,
    pid         BIGINT NOT NULL,
    -- epoch microseconds by the database's clock
    expires_at  BIGINT NOT NULL
);
