-- dbbench: legacy_select_random_ranges.lua (0.5-era select_random_ranges)
-- Table sbtest, dataset B: k = id (see legacy_common.lua).  The 1.0 script
-- select_random_ranges.lua queries sbtest1 of the oltp_common data instead.
-- Per event: one prepared
--   SELECT count(k) FROM sbtest WHERE k BETWEEN ? AND ? OR k BETWEEN ? AND ? ...
-- with --number_of_ranges (10) ranges [v, v + --delta (5)], v drawn
-- (rand.default) from the thread's slice [tid*L, (tid+1)*L],
-- L = table_size/threads.  r/w/o = 1/0/0.

local L = require("legacy_common")
L.dataset = "B"

sysbench.cmdline.options.number_of_ranges =
  {"Number of random BETWEEN ranges per SELECT", 10}
sysbench.cmdline.options.delta = {"Size of BETWEEN ranges", 5}
-- Two placeholders per range; MySQL takes at most 65535 in a statement.
sysbench.cmdline.option_ranges.number_of_ranges = {1, 32767}
sysbench.cmdline.option_ranges.delta = {0, 2147483647}

local q
function prepare_statements()
  local conds, types = {}, {}
  for i = 1, sysbench.opt.number_of_ranges do
    conds[i] = "k BETWEEN ? AND ?"
    types[2 * i - 1], types[2 * i] = L.INT, L.INT
  end
  q = L.prepare("SELECT count(k) FROM sbtest WHERE " ..
                table.concat(conds, " OR "), unpack(types))
end

function event()
  local lo, hi = L.thread_slice()
  local v = {}
  for i = 1, sysbench.opt.number_of_ranges do
    local x = sysbench.rand.default(lo, hi)
    v[2 * i - 1], v[2 * i] = x, x + sysbench.opt.delta
  end
  L.exec(q, unpack(v))
end
