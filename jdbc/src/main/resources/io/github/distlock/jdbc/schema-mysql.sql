-- distlock's lock table for MySQL and MariaDB (InnoDB). Applied by distlock.jdbc.initialize-schema=always, or by hand.
-- With distlock.jdbc.table-name, replace distlock_lock with that name (the initializer does).
-- One row per key ever locked: a released lock keeps its row, marked free (owner NULL), so that its fencing token
-- keeps growing.
CREATE TABLE IF NOT EXISTS distlock_lock (
    -- bytes, not characters: the default collations are case-insensitive and ignore trailing spaces, which would make
    -- 'Order:1' and 'order:1' one lock. 1020 bytes: 255 characters of up to 4 bytes in UTF-8.
    lock_key   VARBINARY(1020) NOT NULL PRIMARY KEY,
    owner      VARCHAR(64),
    instance   VARCHAR(36),
    expires_at BIGINT NOT NULL,
    token      BIGINT NOT NULL,
    -- why the key is closed, NULL while open
    closed     VARCHAR(255),
    INDEX distlock_lock_instance (instance)
) ENGINE = InnoDB;
-- the instances sharing the table, as each announced itself; ignored once expired
CREATE TABLE IF NOT EXISTS distlock_lock_peers (
    instance    VARCHAR(36) NOT NULL PRIMARY KEY,
    application VARCHAR(255) NOT NULL,
    host        VARCHAR(255) NOT NULL,
    pid         BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL
) ENGINE = InnoDB;
