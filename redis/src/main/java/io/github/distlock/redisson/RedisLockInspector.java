package io.github.distlock.redisson;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.github.distlock.spi.LockHolderInfo;
import io.github.distlock.spi.LockInstance;
import io.github.distlock.spi.LockInspector;
import io.github.distlock.spi.NotALockException;
import org.redisson.RedissonObject;
import org.redisson.api.RScript;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;

/**
 * Reads and deletes every hold of a key in one script (the hash of {@code REENTRANT}/{@code FAIR}, the
 * {@code distlock_rw:{<key>}} hash of {@code READ}/{@code WRITE} with each reader's lease keys, and the permits): see
 * {@link #INSPECT}. One script for every kind of lock, so that what it reports and evicts is one moment of the key.
 */
final class RedisLockInspector implements LockInspector {

    /**
     * Reads, and when ARGV[1] is '1' evicts, every hold of a key in one atomic step: the hash of {@code REENTRANT} and
     * {@code FAIR} (KEYS[1], its channel KEYS[2]), Redisson's read/write hash (KEYS[3], its channel KEYS[4]; each
     * reader's lease lives in its own keys {@code <KEYS[3]>:<field>:rwlock_timeout:<n>}, one per hold) and the permits
     * (KEYS[5], members {@code <N>|<owner>} scored by expiry). All five share the key's hash slot.
     *
     * <p>ARGV[2] is the owner that must hold the key ('' for any), ARGV[3] the publish command, ARGV[4] and ARGV[5]
     * the wake-up messages of the two hashes, ARGV[6] the channel on which each evicted owner is named once, in the
     * same step ({@link Evictions}: {@code <key length in bytes>|<key><owner>}), so that its instance tells it now. With an owner, only that owner's holds are taken: its field of the
     * exclusive hash, its read and write fields (and its readers' lease keys), its permits; the read/write hash then
     * gets the time to live of the readers left, as Redisson's own read unlock sets it, and is deleted (waking the
     * writers) only when no live reader is left. Without one, every hold. Only live holds count: a reader whose lease
     * keys all expired, or a permit past its expiry, holds nothing (it neither shows nor makes an owner "hold").
     *
     * <p>Returns {released (1/0), exclusive hash deleted (1/0), then mode, owner, remaining ms for each holder}: the
     * holders evicted when released, otherwise every live holder now. Before anything is touched, every key that exists
     * must look like distlock's (see {@link LockKeys#checkKey}: with an empty prefix the key could name anything, a web session
     * is a hash too): otherwise an error starting with {@value #NOT_A_LOCK}, and nothing is deleted.
     */
    private static final String INSPECT = """
            redis.replicate_commands()
            local function lock_hash(key, kind, what)
              if kind ~= 'hash' then
                return redis.error_reply('NOTALOCK the ' .. what .. ' key holds a ' .. kind .. ', not a lock|')
              end
              local pttl = redis.call('pttl', key)
              if pttl <= 0 then
                return redis.error_reply('NOTALOCK the ' .. what .. ' key is a hash without a time to live, not a lock|')
              end
              local flat = redis.call('hgetall', key)
              for i = 1, #flat, 2 do
                local field, value = flat[i], flat[i + 1]
                local valid
                if field == 'mode' then
                  valid = (value == 'read' or value == 'write')
                else
                  valid = (string.match(field, '^.+:%-?%d+$') ~= nil or string.match(field, '^.+:%-?%d+:write$') ~= nil)
                    and string.match(value, '^%d+$') ~= nil
                end
                if not valid then
                  return redis.error_reply('NOTALOCK the ' .. what .. ' key is a hash whose fields are not those of a lock|')
                end
              end
              return {pttl, flat}
            end
            local function reader_pttl(field, count)
              local most = -2
              for i = tonumber(count), 1, -1 do
                most = math.max(most, redis.call('pttl', KEYS[3] .. ':' .. field .. ':rwlock_timeout:' .. i))
              end
              return most
            end
            local function drop_reader_keys(field, count)
              for i = tonumber(count), 1, -1 do
                redis.call('del', KEYS[3] .. ':' .. field .. ':rwlock_timeout:' .. i)
              end
            end
            local owner = ARGV[2]
            -- read and check everything first: a key that is not a lock is refused before anything is deleted
            local holders = {}
            local exclusive = nil
            local kind = redis.call('type', KEYS[1])['ok']
            if kind ~= 'none' then
              exclusive = lock_hash(KEYS[1], kind, 'lock')
              if exclusive.err then
                return exclusive
              end
              for i = 1, #exclusive[2], 2 do
                if exclusive[2][i] ~= 'mode' then
                  table.insert(holders, {'exclusive', exclusive[2][i], exclusive[1]})
                end
              end
            end
            local shared = nil
            kind = redis.call('type', KEYS[3])['ok']
            if kind ~= 'none' then
              shared = lock_hash(KEYS[3], kind, 'read/write')
              if shared.err then
                return shared
              end
              for i = 1, #shared[2], 2 do
                local field, value = shared[2][i], shared[2][i + 1]
                if field ~= 'mode' then
                  local writer = string.match(field, '^(.+):write$')
                  if writer then
                    table.insert(holders, {'write', writer, shared[1]})
                  else
                    local left = reader_pttl(field, value)
                    if left > 0 then
                      table.insert(holders, {'read', field, left})
                    end
                  end
                end
              end
            end
            local now = nil
            kind = redis.call('type', KEYS[5])['ok']
            if kind ~= 'none' then
              if kind ~= 'zset' then
                return redis.error_reply('NOTALOCK the permits key holds a ' .. kind .. ', not permits|')
              end
              local t = redis.call('time')
              now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
              local members = redis.call('zrange', KEYS[5], 0, -1, 'withscores')
              for i = 1, #members, 2 do
                local field = string.match(members[i], '^%d+|(.+:%-?%d+)$')
                if field == nil then
                  return redis.error_reply('NOTALOCK the permits key has members that are not permits|')
                end
                local left = tonumber(members[i + 1]) - now
                if left > 0 then
                  table.insert(holders, {'permit', field, left})
                end
              end
            end
            local evicted = {}
            for _, holder in ipairs(holders) do
              if owner == '' or holder[2] == owner then
                table.insert(evicted, holder)
              end
            end
            local result = {'0', '0'}
            local listed = holders
            if ARGV[1] == '1' and #evicted > 0 then
              result[1] = '1'
              listed = evicted
              if exclusive and (owner == '' or redis.call('hexists', KEYS[1], owner) == 1) then
                result[2] = '1'
                redis.call('del', KEYS[1])
                redis.call(ARGV[3], KEYS[2], ARGV[4])
              end
              if shared then
                local flat = shared[2]
                local touched = false
                local live = -3
                local other_writer = false
                for i = 1, #flat, 2 do
                  local field, value = flat[i], flat[i + 1]
                  if field ~= 'mode' then
                    local writer = string.match(field, '^(.+):write$')
                    if owner == '' or field == owner or writer == owner then
                      touched = true
                      redis.call('hdel', KEYS[3], field)
                      if not writer then
                        drop_reader_keys(field, value)
                      end
                    elseif writer then
                      other_writer = true
                    else
                      live = math.max(live, reader_pttl(field, value))
                    end
                  end
                end
                -- what is left decides, as in Redisson's read unlock: a writer keeps the hash as it is, live readers
                -- give it their longest lease, and a hash with neither is deleted and its waiters woken
                if touched and not other_writer then
                  if live > 0 then
                    redis.call('pexpire', KEYS[3], live)
                  else
                    redis.call('del', KEYS[3])
                    redis.call(ARGV[3], KEYS[4], ARGV[5])
                    redis.call(ARGV[3], KEYS[4], ARGV[4])
                  end
                end
              end
              if now then
                if owner == '' then
                  redis.call('del', KEYS[5])
                else
                  local members = redis.call('zrange', KEYS[5], 0, -1)
                  for _, member in ipairs(members) do
                    if string.match(member, '^%d+|(.+)$') == owner then
                      redis.call('zrem', KEYS[5], member)
                    end
                  end
                end
              end
            end
            if result[1] == '1' then
              local told = {}
              for _, holder in ipairs(evicted) do
                if not told[holder[2]] then
                  told[holder[2]] = true
                  redis.call('publish', ARGV[6], string.len(KEYS[1]) .. '|' .. KEYS[1] .. holder[2])
                end
              end
            end
            for _, holder in ipairs(listed) do
              table.insert(result, holder[1])
              table.insert(result, holder[2])
              table.insert(result, string.format('%.0f', holder[3]))
            end
            return result
            """;

    /** How the script's refusal of a key that is not a lock starts. */
    static final String NOT_A_LOCK = "NOTALOCK";

    private final RedissonClient redisson;
    private volatile CompletableFuture<Long> pendingPing;
    private final HandoffLocks handoffs;
    private final UnlockMessages unlockMessages;
    private final InstanceAnnouncer announcer;
    private final Evictions evictions;

    RedisLockInspector(RedissonClient redisson, HandoffLocks handoffs, UnlockMessages unlockMessages,
            InstanceAnnouncer announcer, Evictions evictions) {
        this.evictions = evictions;
        this.redisson = redisson;
        this.handoffs = handoffs;
        this.unlockMessages = unlockMessages;
        this.announcer = announcer;
    }

    @Override
    public List<LockHolderInfo> holders(String key) {
        return inspect(key, false, null).holders();
    }

    @Override
    public List<LockHolderInfo> forceRelease(String key) {
        return inspect(key, true, null).holders();
    }

    @Override
    public ForceRelease forceRelease(String key, String expectedOwner) {
        return inspect(key, true, expectedOwner);
    }

    /**
     * Every hold of {@code key} (both hashes and the permits), read and evicted by one script: see {@link #INSPECT}.
     * With an expected owner only that owner's holds are taken, and the others stay as they were.
     */
    private ForceRelease inspect(String key, boolean evict, String expectedOwner) {
        LockKeys.checkKey(key);
        String readWrite = LockKeys.readWriteKey(key);
        List<Object> keys = List.of(key, LockKeys.companion("redisson_lock__channel", key), readWrite,
                RedissonObject.prefixName("redisson_rwlock", readWrite), PermitLocks.permitsKey(key));
        // READ_UNLOCK wakes every waiter of the read/write hash, as Redisson's write-lock release does: readers may
        // all enter at once; UNLOCK follows it there, for a waiter between two attempts (see WAKE_IF_FREE)
        List<Object> reply = joinInspection(redisson.getScript(StringCodec.INSTANCE).<List<Object>>evalAsync(key,
                RScript.Mode.READ_WRITE, INSPECT, RScript.ReturnType.LIST, keys, evict ? "1" : "0",
                (expectedOwner != null) ? expectedOwner : "", unlockMessages.publishCommand(),
                String.valueOf(org.redisson.pubsub.LockPubSub.UNLOCK_MESSAGE),
                String.valueOf(org.redisson.pubsub.LockPubSub.READ_UNLOCK_MESSAGE), Evictions.CHANNEL)
                .toCompletableFuture());
        if ("1".equals(reply.get(1).toString())) {
            // the FAIR queue's next waiter gets it now, not at its next poll
            Futures.join(handoffs.handOffIfFree(key));
        }
        List<LockHolderInfo> holders = new java.util.ArrayList<>();
        java.util.Map<String, LockInstance> instances = new java.util.HashMap<>();
        for (int i = 2; i + 2 < reply.size(); i += 3) {
            String mode = reply.get(i).toString();
            String owner = reply.get(i + 1).toString();
            long remaining = Long.parseLong(reply.get(i + 2).toString());
            int colon = owner.lastIndexOf(':');
            String instanceId = (colon > 0) ? owner.substring(0, colon) : null;
            LockInstance instance = (instanceId != null) ? instances.computeIfAbsent(instanceId, announcer::instance) : null;
            holders.add(new LockHolderInfo(key, owner, instanceId, instance, mode,
                    (remaining >= 0) ? Duration.ofMillis(remaining) : null));
        }
        boolean released = "1".equals(reply.get(0).toString());
        if (released) {
            // this instance's own holders are told without waiting for the message
            evictions.evictedHere(key, holders.stream().map(LockHolderInfo::owner).toList());
        }
        return new ForceRelease(released, holders);
    }

    /** The script's answer; its refusal of a key that is not a lock becomes a {@link NotALockException}. */
    private static List<Object> joinInspection(CompletableFuture<List<Object>> reply) {
        try {
            return Futures.join(reply);
        }
        catch (RuntimeException ex) {
            for (Throwable cause = ex; cause != null; cause = cause.getCause()) {
                String message = cause.getMessage();
                int at = (message != null) ? message.indexOf(NOT_A_LOCK + " ") : -1;
                if (at >= 0) {
                    int end = message.indexOf('|', at);
                    throw new NotALockException("not a distlock lock: " + message.substring(
                            at + NOT_A_LOCK.length() + 1, (end > at) ? end : message.length()));
                }
            }
            throw ex;
        }
    }

    /**
     * One command that reaches every master ({@code DBSIZE}), waited for at most {@code timeout}. At most one is in
     * flight: while Redis does not answer, later pings wait for the same command instead of piling up more (Redisson
     * keeps retrying one for its whole retry budget).
     */
    @Override
    public boolean ping(Duration timeout) {
        CompletableFuture<Long> ping;
        synchronized (this) {
            ping = pendingPing;
            if (ping == null || ping.isDone()) {
                try {
                    ping = redisson.getKeys().countAsync().toCompletableFuture();
                }
                catch (RuntimeException ex) {
                    // client shut down or not able to send at all
                    return false;
                }
                pendingPing = ping;
            }
        }
        try {
            ping.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
            return true;
        }
        catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            return false;
        }
        catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException ex) {
            return false;
        }
    }

    /** See {@link InstanceAnnouncer#announce}. */
    @Override
    public void announce(LockInstance self) {
        announcer.announce(self);
    }
}
