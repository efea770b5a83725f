package io.github.distlock.redisson;

/**
 * The Lua scripts of the hand-off lock ({@link HandoffLocks}) and the codes their replies use. Their text is the
 * protocol other instances of distlock speak on the same keys: it changes only together with them.
 */
final class HandoffScripts {

    /** How a script's reply says that the key is closed. */
    static final long CLOSED = -1;

    /** How the acquisition script says that the waiter was buried (see {@link #BURY}): it did nothing. */
    static final long BURIED = -2;

    /**
     * How long a buried waiter's tombstone lives: longer than any script of it can still be on its way — a command on a
     * connection that broke, or stalled in the network, reaches Redis within the connection's life or never, and
     * Linux gives up retransmitting on a half-open connection after about 15 minutes (tcp_retries2). Only waiters with
     * a script whose answer was lost are buried: none in normal operation.
     */
    static final long TOMBSTONE_MILLIS = 30 * 60_000;

    /**
     * Lua shared by the scripts: the first live waiter (skipping list elements whose entry is gone or expired), and the
     * grant to it. KEYS[1] lock, KEYS[2] queue, KEYS[3] entries.
     */
    static final String FUNCTIONS = """
            local function now_ms()
              local t = redis.call('time')
              return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
            end
            local function live_head(now)
              while true do
                local head = redis.call('lindex', KEYS[2], 0)
                if head == false then
                  return false, 0
                end
                local entry = redis.call('hget', KEYS[3], head)
                if entry == false then
                  redis.call('lpop', KEYS[2])
                else
                  local sep = string.find(entry, ':', 1, true)
                  if tonumber(string.sub(entry, 1, sep - 1)) <= now then
                    redis.call('hdel', KEYS[3], head)
                    redis.call('lpop', KEYS[2])
                  else
                    return head, tonumber(string.sub(entry, sep + 1))
                  end
                end
              end
            end
            local function grant(head, lease, now, grant_ms, channel_prefix, key)
              redis.call('lpop', KEYS[2])
              redis.call('hdel', KEYS[3], head)
              local ttl = math.min(lease, grant_ms)
              redis.call('hset', KEYS[1], head, 1)
              redis.call('pexpire', KEYS[1], ttl)
              local client, owner = string.match(head, '^(.*):(%-?%d+)$')
              redis.call('publish', channel_prefix .. client,
                  'g|' .. owner .. '|' .. ttl .. '|' .. string.format('%.0f', now) .. '|' .. key)
            end
            -- a waiter leaves its place too, not only its entry: callers that try a held key with short waits would
            -- otherwise grow the list by one element per try for as long as the key is held. From the tail, where a
            -- short wait's element is; only when the waiter was queued (it had an entry)
            local function leave(field)
              if redis.call('hdel', KEYS[3], field) == 1 then
                redis.call('lrem', KEYS[2], -1, field)
              end
            end
            local function hand_off(grant_ms, channel_prefix, key)
              if redis.call('llen', KEYS[2]) == 0 then
                return
              end
              local now = now_ms()
              local head, lease = live_head(now)
              if head then
                grant(head, lease, now, grant_ms, channel_prefix, key)
              end
            end
            """;

    /**
     * KEYS: lock, queue, entries, closed, closes, the owner's tombstone. ARGV: [1] owner field, [2] lease ms (the
     * watchdog timeout for a watchdog
     * lock), [3] '1' to queue up when not acquired, '0' to try once (and leave the queue), [4] entry time to live ms,
     * [5] grant ms, [6] channel prefix, [7] key as the grantee knows it.
     * Returns {1} acquired (with the full lease), {0, pttl, now, closes} not acquired (queued with [3] = '1'; closes:
     * the key's close count, see {@link #CLOSE}), {-1, reason} closed, {-2} buried (nothing done).
     */
    static final String ACQUIRE = "redis.replicate_commands()\n" + FUNCTIONS + """
            if redis.call('exists', KEYS[6]) == 1 then
              -- a script of a waiter whose caller is done, carried out late: it must neither take nor queue
              return {-2}
            end
            if redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
              -- granted by a release whose message has not arrived (or was lost): claim it with the full lease. Before
              -- the closed mark: a grant made before the close makes this waiter the holder, which keeps its lock
              redis.call('pexpire', KEYS[1], ARGV[2])
              redis.call('hdel', KEYS[3], ARGV[1])
              return {1}
            end
            local closed = redis.call('get', KEYS[4])
            if closed then
              redis.call('hdel', KEYS[3], ARGV[1])
              return {-1, closed}
            end
            if redis.call('exists', KEYS[1]) == 0 then
              local now = 0
              local head = false
              local lease = 0
              if redis.call('llen', KEYS[2]) > 0 then
                now = now_ms()
                head, lease = live_head(now)
              end
              if head == false or head == ARGV[1] then
                if head then
                  redis.call('lpop', KEYS[2])
                end
                redis.call('hdel', KEYS[3], ARGV[1])
                redis.call('hset', KEYS[1], ARGV[1], 1)
                redis.call('pexpire', KEYS[1], ARGV[2])
                return {1}
              end
              -- free, with a live waiter ahead whose hand-off was lost or whose grant expired: it goes first
              grant(head, lease, now, tonumber(ARGV[5]), ARGV[6], ARGV[7])
            end
            local pttl = redis.call('pttl', KEYS[1])
            if ARGV[3] == '0' then
              leave(ARGV[1])
              return {0, pttl, 0}
            end
            local now = now_ms()
            if redis.call('hexists', KEYS[3], ARGV[1]) == 0 then
              redis.call('rpush', KEYS[2], ARGV[1])
            end
            local ttl = tonumber(ARGV[4])
            redis.call('hset', KEYS[3], ARGV[1], string.format('%.0f', now + ttl) .. ':' .. ARGV[2])
            redis.call('pexpire', KEYS[2], 2 * ttl)
            redis.call('pexpire', KEYS[3], 2 * ttl)
            local closes = redis.call('get', KEYS[5])
            if not closes then
              -- a key's count starts (or, lost or expired, starts again) above any number a close may have sent
              -- before: from Redis's clock, ms times 1000
              closes = string.format('%.0f', now * 1000)
              redis.call('set', KEYS[5], closes)
            end
            redis.call('pexpire', KEYS[5], 2 * ttl)
            return {0, pttl, string.format('%.0f', now), closes}
            """;

    /**
     * Releases the lock if ARGV[1] holds it and hands it to the next live waiter; otherwise only takes ARGV[1] out of
     * the queue (a waiter that gives up). KEYS: lock, queue, entries. ARGV: [1] owner field, [2] grant ms, [3] channel
     * prefix, [4] key, [5] the key's Redisson lock channel, [6] the publish command Redisson subscribes for. Returns 1
     * released, 0 not held.
     *
     * <p>A release that leaves the key free (no live waiter to hand it to) wakes the takers of the key's other exclusive
     * type: a REENTRANT caller on the same key (same hash) waits for Redisson's unlock message on the lock channel, else
     * for the lock's time to live or its own wait, whichever ends first — a FAIR holder's release must not leave it
     * asleep beside a free lock for the rest of that holder's lease. FAIR waiters need no message: they are granted here.
     */
    static final String RELEASE_BODY = """
            if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
              leave(ARGV[1])
              return 0
            end
            redis.call('del', KEYS[1])
            hand_off(tonumber(ARGV[2]), ARGV[3], ARGV[4])
            if redis.call('exists', KEYS[1]) == 0 then
              redis.call(ARGV[6], ARGV[5], 'UNLOCK_MESSAGE')
            end
            return 1
            """.replace("UNLOCK_MESSAGE", String.valueOf(org.redisson.pubsub.LockPubSub.UNLOCK_MESSAGE));

    static final String RELEASE = "redis.replicate_commands()\n" + FUNCTIONS + RELEASE_BODY;

    /**
     * The give-back of a waiter whose caller is done while a script of it may still be on its way (its answer was
     * lost): RELEASE, and a tombstone (KEYS[6], ARGV[7] ms) that makes every later acquisition script of this owner do
     * nothing. One answer is enough: what ran before is undone, what runs after does nothing (for the tombstone's
     * life). Without it, a give-back could only try again for a while, and a script delayed past that took the lock for
     * nobody. KEYS: as ACQUIRE. ARGV: as RELEASE, and [7] the tombstone's life. Returns as RELEASE.
     */
    static final String BURY = "redis.replicate_commands()\n" + FUNCTIONS
            + "redis.call('set', KEYS[6], '1', 'px', ARGV[7])\n" + RELEASE_BODY;

    /** Hands a free lock to the next live waiter (after a forced release). KEYS as RELEASE; ARGV [1] grant ms, [2], [3]. */
    static final String HAND_OFF_IF_FREE = "redis.replicate_commands()\n" + FUNCTIONS + """
            if redis.call('exists', KEYS[1]) == 0 then
              hand_off(tonumber(ARGV[1]), ARGV[2], ARGV[3])
            end
            return 1
            """;

    /** Sets the lock's time to live to ARGV[2] ms if ARGV[1] holds it: claim and watchdog renewal. 1 held, 0 not. */
    static final String RENEW = """
            if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
              return 0
            end
            redis.call('pexpire', KEYS[1], ARGV[2])
            return 1
            """;

    /**
     * Closes a key: marks it (KEYS[4], value ARGV[1]), counts the close (KEYS[5]), empties the queue, and tells each
     * client with a waiter in it (once per client) which of its waiters the close took out of the queue, and the
     * close's number. The holder, if any, keeps its lock. ARGV: [1] reason, [2] channel prefix, [3] key, [4] the
     * count's time to live in ms (the queue's: twice the entry time to live). Message:
     * {@code c|<key length in bytes>|<key><close number>|<owner>,<owner>...|<reason>}. Returns the number of waiters
     * told.
     *
     * <p>The count orders closes against queueing scripts (each returns the count it read), by Redis's own order of
     * scripts rather than by clocks. It lives as long as the queue (refreshed by each queueing and close); a count that
     * is gone (expired, or lost in a failover) starts again from Redis's clock in ms times 1000, above any
     * number sent before — unless the clock stepped back by more than the time since, when a waiter may skip a leave
     * it needed: a stale entry, skipped once expired or granted for one grant, never a second holder.
     */
    static final String CLOSE = "redis.replicate_commands()\n" + """
            redis.call('set', KEYS[4], ARGV[1])
            if redis.call('exists', KEYS[5]) == 0 then
              -- a count that was lost (failover, eviction, expiry) restarts above any number an old message may still
              -- carry: from Redis's clock in ms, times 1000
              local t = redis.call('time')
              local seed = tonumber(t[1]) * 1000000 + math.floor(tonumber(t[2]) / 1000) * 1000
              redis.call('set', KEYS[5], string.format('%.0f', seed))
            end
            local number = string.format('%.0f', redis.call('incr', KEYS[5]))
            redis.call('pexpire', KEYS[5], tonumber(ARGV[4]))
            local waiting = redis.call('hkeys', KEYS[3])
            local owners = {}
            local clients = {}
            for _, field in ipairs(waiting) do
              local client, owner = string.match(field, '^(.*):(%-?%d+)$')
              if client then
                if not owners[client] then
                  owners[client] = {}
                  table.insert(clients, client)
                end
                table.insert(owners[client], owner)
              end
            end
            for _, client in ipairs(clients) do
              redis.call('publish', ARGV[2] .. client, 'c|' .. string.len(ARGV[3]) .. '|' .. ARGV[3] .. number .. '|'
                  .. table.concat(owners[client], ',') .. '|' .. ARGV[1])
            end
            redis.call('del', KEYS[2], KEYS[3])
            return #waiting
            """;

    private HandoffScripts() {
    }
}
