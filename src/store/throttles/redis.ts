/**
 * The attempt counters in Redis (when LATCHKEY_REDIS_URL is set): one hash per key (c: count,
 * l: last attempt, b: blocked until, all epoch milliseconds of the service's clock), changed only
 * by the Lua scripts below, so each operation is one atomic round trip that no other node's
 * operation interleaves with. Every key carries a PEXPIRE covering both its window and its block:
 * Redis forgets idle keys itself and no purge job is needed.
 * A Redis error rejects the operation (no retry, no fallback to letting the attempt through): the
 * caller's request fails closed.
 */
import type { Redis } from 'ioredis';
import { delaySteps, type Limit, type Reserved, type ThrottleStore } from './types.ts';

/** Integers as Redis stores them: Lua's own number formatting may switch to exponent notation. */
const FMT = `local function fmt(n) return string.format('%d', n) end`;

/**
 * KEYS: the keys; ARGV: now, windowStart, and per key [budget, delay steps…] as JSON. First every key
 * is checked for a block (all or nothing, like the database store's transaction), then each count
 * goes up (back to 1 past the window) and the delay for the new count sets the block at once.
 * Returns {1, count1, blockedUntil1, …} or {0, index of the blocked key, its block}.
 */
const RESERVE = `${FMT}
local now = tonumber(ARGV[1])
local windowStart = tonumber(ARGV[2])
local limits = cjson.decode(ARGV[3])
for i, key in ipairs(KEYS) do
  local blocked = tonumber(redis.call('HGET', key, 'b') or '0')
  if blocked > now then return {0, i, blocked} end
end
local out = {1}
for i, key in ipairs(KEYS) do
  local limit = limits[i]
  local state = redis.call('HMGET', key, 'c', 'l')
  local count = 1
  if state[1] and tonumber(state[2]) >= windowStart then count = tonumber(state[1]) + 1 end
  local delay = 0
  local steps = #limit - 1
  if count >= limit[1] and steps > 0 then
    delay = limit[math.min(count - limit[1] + 1, steps) + 1]
  end
  local blockedUntil = 0
  if delay > 0 then blockedUntil = now + delay end
  redis.call('HSET', key, 'c', fmt(count), 'l', ARGV[1], 'b', fmt(blockedUntil))
  redis.call('PEXPIRE', key, fmt(math.max(1, now - windowStart, blockedUntil - now)))
  out[#out + 1] = count
  out[#out + 1] = blockedUntil
end
return out`;

/** KEYS[1]; ARGV: the reservation's block. One less in the count; its block lifted if still the current one. */
const UNRESERVE = `
local count = tonumber(redis.call('HGET', KEYS[1], 'c') or '0')
if count <= 0 then return 0 end
redis.call('HINCRBY', KEYS[1], 'c', -1)
local mine = tonumber(ARGV[1])
if mine > 0 and tonumber(redis.call('HGET', KEYS[1], 'b') or '0') == mine then redis.call('HSET', KEYS[1], 'b', '0') end
return 1`;

/** KEYS[1]; ARGV: until, now. Lengthens an existing key's block (never shortens it), and its expiry with it. */
const EXTEND_BLOCK = `${FMT}
local blocked = redis.call('HGET', KEYS[1], 'b')
local target = tonumber(ARGV[1])
if not blocked or tonumber(blocked) >= target then return 0 end
redis.call('HSET', KEYS[1], 'b', ARGV[1])
local need = target - tonumber(ARGV[2])
local ttl = redis.call('PTTL', KEYS[1])
if ttl >= 0 and ttl < need then redis.call('PEXPIRE', KEYS[1], fmt(need)) end
return 1`;

type Arg = string | number;
interface ThrottleCommands {
  latchkeyThrottleReserve(numKeys: number, ...args: Arg[]): Promise<number[]>;
  latchkeyThrottleUnreserve(key: string, blockedUntil: Arg): Promise<number>;
  latchkeyThrottleExtendBlock(key: string, until: Arg, now: Arg): Promise<number>;
}

/** The limit as the reserve script reads it: the budget, then the delays from the budget on. */
const limitArg = (limit: Limit): number[] => [limit.budget, ...delaySteps(limit)];

/**
 * @param prefix of every key (tests give each run its own). The scripts are sent once per connection
 * (EVALSHA, ioredis's defineCommand), then only their digest.
 */
export function createRedisThrottleStore(opts: { redis: Redis; prefix?: string }): ThrottleStore {
  const prefix = opts.prefix ?? 'latchkey:throttle:';
  const { redis } = opts;
  redis.defineCommand('latchkeyThrottleReserve', { lua: RESERVE });
  redis.defineCommand('latchkeyThrottleUnreserve', { lua: UNRESERVE, numberOfKeys: 1 });
  redis.defineCommand('latchkeyThrottleExtendBlock', { lua: EXTEND_BLOCK, numberOfKeys: 1 });
  const commands = redis as unknown as ThrottleCommands;

  return {
    joinsTransactions: false,
    async reserve(requests, now, windowStart) {
      const reply = await commands.latchkeyThrottleReserve(
        requests.length, ...requests.map((r) => prefix + r.key),
        now, windowStart, JSON.stringify(requests.map((r) => limitArg(r.limit))),
      );
      if (reply[0] === 0) return { refused: { key: requests[reply[1]! - 1]!.key, blockedUntil: reply[2]! } };
      return { reserved: requests.map((_, i) => ({ count: reply[1 + 2 * i]!, blockedUntil: reply[2 + 2 * i]! })) };
    },
    async blockedUntil(key) {
      return Number(await redis.hget(prefix + key, 'b') ?? 0);
    },
    async unreserve(key, reserved: Reserved) {
      await commands.latchkeyThrottleUnreserve(prefix + key, reserved.blockedUntil);
    },
    async extendBlock(key, until, now) {
      await commands.latchkeyThrottleExtendBlock(prefix + key, until, now);
    },
    async clear(key) {
      await redis.del(prefix + key);
    },
    // Every key expires by itself (PEXPIRE at each reservation and block).
    purgeOld: async () => {},
  };
}
