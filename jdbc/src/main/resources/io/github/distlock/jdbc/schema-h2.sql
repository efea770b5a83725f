-- distlock's lock table for H2. Applied by distlock.jdbc.initialize-schema (embedded, the default, covers an in-memory
-- H2), or by hand. With distlock.jdbc.table-name, replace distlock_lock with that name (the initializer does).
-- One row per key ever locked: a released lock keeps its row, marked free (owner NULL), so that its fencing token
-- keeps growing.
CREATE TABLE IF NOT EXISTS distlock_lock (
    lock_key   VARCHAR(255) NOT NULL PRIMARY KEY,
    owner      VARCHAR(64),
    instance   VARCHAR(36),
    expires_at BIGINT NOT NULL,
    token      BIGINT NOT NULL,
    closed     VARCHAR(255)
);
CREATE INDEX IF NOT EXISTS distlock_lock_instance ON distlock_lock (instance);
CREATE TABLE IF NOT EXISTS distlock_lock_peers (
    instance    VARCHAR(36) NOT NULL PRIMARY KEY,
    application VARCHAR(255) NOT NULL,
    host        VARCHAR(255) NOT NULL,
    pid         BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL
);
