-- dbbench: select_random_ranges.lua (sysbench 1.0.20 compatible)
-- Per event: one prepared
--   SELECT count(k) FROM sbtest1 WHERE k BETWEEN ? AND ? OR k BETWEEN ? AND ? ...
-- with --number_of_ranges (10) ranges [v, v + --delta (5)]; thread tid draws v
-- (rand.default) from its own k slice [tid*L, (tid+1)*L], L = table_size/threads.
-- r/w/o = 1/0/0.  Data, prepare and options as oltp_common (only sbtest1).

require("oltp_common")

sysbench.cmdline.options.number_of_ranges =
  {"Number of random BETWEEN ranges per SELECT", 10}
sysbench.cmdline.options.delta =
  {"Size of BETWEEN ranges", 5}
-- Two placeholders per range; MySQL takes at most 65535 in a statement.
sysbench.cmdline.option_ranges.number_of_ranges = {1, 32767}
sysbench.cmdline.option_ranges.delta = {0, 2147483647}

local common_cleanup = cleanup
function cleanup()
  assert(sysbench.opt.tables == 1, "this test uses only sbtest1: use --tables=1")
  common_cleanup()
end

-- Statement on sbtest1 kept in stmt[1]/param[1], so oltp_common's
-- thread_init/thread_done/reconnect handling cover it.
function prepare_statements()
  local n, ranges = sysbench.opt.number_of_ranges, {}
  for i = 1, n do ranges[i] = "k BETWEEN ? AND ?" end
  local st = con:prepare("SELECT count(k) FROM sbtest1 WHERE " ..
                         table.concat(ranges, " OR "))
  local p = {}
  for i = 1, 2 * n do p[i] = st:bind_create(sysbench.sql.type.INT) end
  st:bind_param(unpack(p))
  stmt[1], param[1] = {random_ranges = st}, {random_ranges = p}
end

function event()
  local p = param[1].random_ranges
  local lo, hi = thread_slice()
  for i = 1, #p, 2 do
    local v = sysbench.rand.default(lo, hi)
    p[i]:set(v)
    p[i + 1]:set(v + sysbench.opt.delta)
  end
  stmt[1].random_ranges:execute()
end
