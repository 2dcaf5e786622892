-- dbbench: select_random_points.lua (sysbench 1.0.20 compatible)
-- Per event: one prepared `SELECT id, k, c, pad FROM sbtest1 WHERE k IN (?, ...)`
-- with --random_points (10) values; thread tid draws them (rand.default) from
-- its own k slice [tid*L, (tid+1)*L], L = table_size/threads.  r/w/o = 1/0/0.
-- Data, prepare and options as oltp_common (only sbtest1 is queried).

require("oltp_common")

sysbench.cmdline.options.random_points =
  {"Number of random points in the IN() clause in generated SELECTs", 10}
-- One placeholder per point; MySQL takes at most 65535 in a statement.
sysbench.cmdline.option_ranges.random_points = {1, 65535}

local common_cleanup = cleanup
function cleanup()
  assert(sysbench.opt.tables == 1, "this test uses only sbtest1: use --tables=1")
  common_cleanup()
end

-- Statement on sbtest1 kept in stmt[1]/param[1], so oltp_common's
-- thread_init/thread_done/reconnect handling cover it.
function prepare_statements()
  local n, marks = sysbench.opt.random_points, {}
  for i = 1, n do marks[i] = "?" end
  local st = con:prepare("SELECT id, k, c, pad FROM sbtest1 WHERE k IN (" ..
                         table.concat(marks, ", ") .. ")")
  local p = {}
  for i = 1, n do p[i] = st:bind_create(sysbench.sql.type.INT) end
  st:bind_param(unpack(p))
  stmt[1], param[1] = {random_points = st}, {random_points = p}
end

function event()
  local p = param[1].random_points
  local lo, hi = thread_slice()
  for i = 1, #p do p[i]:set(sysbench.rand.default(lo, hi)) end
  stmt[1].random_points:execute()
end
