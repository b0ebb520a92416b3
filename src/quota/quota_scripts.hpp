#pragma once
// The quota's Redis scripts, each one atomic command with its contract (docs/quota.md). Used
// by QuotaCounter only.

#include <string_view>

namespace wg::quota::scripts {

// KEYS: 1 charged counter, 2 leases hash, 3 unknown counter.
// ARGV: 1 instance, 2 spent, 3 unsent, 4 returned, 5 granted as the instance knows it,
//       6 wanted, 7 limit (0 = none), 8 the fleet's requests sent as the instance knows them
//       (its high-water mark).
// The instance's figures are cumulative and applied as maxima, so the script is idempotent.
// Normally the counter moves by what the instance sent beyond its grants (an unlimited quota
// counted while Redis was away), minus what it gave back, plus the new grant.
// When Redis lost data, the counter is counted again instead: the counter is missing while the
// ledger exists (or while the instance knows of others' spending), or the ledger no longer has
// the grants the instance knew of. It becomes the highest of what it holds, the ledger's sums,
// and the fleet's sent requests as known (the highest high-water mark reported since the
// loss, kept as `floor`) plus what is leased; an instance whose ledger is rebuilt adds
// nothing on top (its history is in the sums or in the marks). `lost` tells the instance to
// adopt the grant Redis rebuilt from its figures.
// The keys carry no TTL (PERSIST: earlier versions set one): the gateway deletes them.
// Returns {granted, spent, unsent, returned, charged, leased, lost, unknown_used, restored,
//          the counter before (-1: missing)}.
inline constexpr std::string_view kLeaseScript = R"lua(
local id = ARGV[1]
local f = redis.call('HMGET', KEYS[2], id .. ':g', id .. ':s', id .. ':u', id .. ':r', 'leased')
local g = tonumber(f[1]) or 0
local s = tonumber(f[2]) or 0
local u = tonumber(f[3]) or 0
local r = tonumber(f[4]) or 0
local leased = tonumber(f[5]) or 0
local before = g - (s - u) - r
local s2 = math.max(s, tonumber(ARGV[2]))
local u2 = math.max(u, tonumber(ARGV[3]))
local r2 = math.max(r, tonumber(ARGV[4]))
local g2 = math.max(g, s2 - u2 + r2)
local seen = tonumber(ARGV[8])
local stored = redis.call('GET', KEYS[1])
local held = tonumber(stored) or 0
local lost = 0
if g < tonumber(ARGV[5]) then lost = 1 end
local recount = lost == 1 or
  (not stored and (seen > s2 - u2 or redis.call('EXISTS', KEYS[2]) == 1))
local charged
local restored = 0
if recount then
  redis.call('HSET', KEYS[2], id .. ':g', g2, id .. ':s', s2, id .. ':u', u2, id .. ':r', r2)
  local sums = {g = 0, s = 0, u = 0, r = 0}
  local all = redis.call('HGETALL', KEYS[2])
  for i = 1, #all, 2 do
    local kind = string.match(all[i], ':([gsur])$')
    if kind then sums[kind] = sums[kind] + tonumber(all[i + 1]) end
  end
  leased = sums.g - (sums.s - sums.u) - sums.r
  local floor = math.max(tonumber(redis.call('HGET', KEYS[2], 'floor')) or 0, seen)
  redis.call('HSET', KEYS[2], 'floor', floor)
  charged = math.max(held, sums.g - sums.r, floor + leased)
  if not stored or charged > held then restored = 1 end
else
  charged = held + (g2 - g) - (r2 - r)
  leased = leased + (g2 - (s2 - u2) - r2) - before
end
local grant = tonumber(ARGV[6])
local limit = tonumber(ARGV[7])
if limit > 0 then grant = math.max(0, math.min(grant, limit - charged)) end
g2 = g2 + grant
charged = charged + grant
leased = leased + grant
if not stored or charged ~= held then redis.call('SET', KEYS[1], charged) end
local unknown = tonumber(redis.call('GET', KEYS[3])) or 0
redis.call('HSET', KEYS[2], id .. ':g', g2, id .. ':s', s2, id .. ':u', u2, id .. ':r', r2,
  'leased', leased)
redis.call('PERSIST', KEYS[1])
redis.call('PERSIST', KEYS[2])
redis.call('PERSIST', KEYS[3])
local previous = -1
if stored then previous = held end
return {g2, s2, u2, r2, charged, leased, lost, unknown, restored, previous}
)lua";

inline constexpr std::string_view kRefundScript = R"lua(
local used = tonumber(redis.call('GET', KEYS[1])) or 0
if used > 0 then return redis.call('DECR', KEYS[1]) end
return 0
)lua";

// KEYS[1] unknown counter (no TTL, as every quota key); ARGV 1 cap (-1 = none).
// Returns {allowed, used}.
inline constexpr std::string_view kUnknownScript = R"lua(
local used = tonumber(redis.call('GET', KEYS[1])) or 0
local cap = tonumber(ARGV[1])
if cap >= 0 and used >= cap then return {0, used} end
used = redis.call('INCR', KEYS[1])
return {1, used}
)lua";

}  // namespace wg::quota::scripts
