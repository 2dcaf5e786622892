-- dbbench: legacy_select_random_points.lua (0.5-era select_random_points)
-- Table sbtest, dataset B: k = id (see legacy_common.lua).  The 1.0 script
-- select_random_points.lua queries sbtest1 of the oltp_common data instead.
-- Per event: one prepared `SELECT id, k, c, pad FROM sbtest WHERE k IN (?, ...)`
-- with --random_points (10) values drawn (rand.default) from the thread's
-- slice [tid*L, (tid+1)*L], L = table_size/threads.  r/w/o = 1/0/0.

local L = require("legacy_common")
L.dataset = "B"

sysbench.cmdline.options.random_points =
  {"Number of random points in the IN() clause in generated SELECTs", 10}
-- One placeholder per point; MySQL takes at most 65535 in a statement.
sysbench.cmdline.option_ranges.random_points = {1, 65535}

local q
function prepare_statements()
  local marks, types = {}, {}
  for i = 1, sysbench.opt.random_points do marks[i], types[i] = "?", L.INT end
  q = L.prepare("SELECT id, k, c, pad FROM sbtest WHERE k IN (" ..
                table.concat(marks, ", ") .. ")", unpack(types))
end

function event()
  local lo, hi = L.thread_slice()
  local v = {}
  for i = 1, sysbench.opt.random_points do v[i] = sysbench.rand.default(lo, hi) end
  L.exec(q, unpack(v))
end
