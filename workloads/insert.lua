-- dbbench: insert.lua (sysbench 0.5-era workload, 1.0 API)
-- Table sbtest, dataset C: created empty (see legacy_common.lua).
-- Per event: one prepared `INSERT INTO sbtest VALUES (?,?,?,?)`: id NULL so
-- the server assigns it (PostgreSQL: DEFAULT), random k in [1, table_size],
-- random 119/59-character c/pad.  r/w/o = 0/1/0.
-- --auto_inc=off: ids from rand.unique() (PostgreSQL/SQLite: minus 2^31), so
-- they never collide across threads. (0.5 drew sb_rand_uniq(1, table_size),
-- which 1.0 emulates by re-drawing unique() until it falls in range:
-- hundreds of thousands of draws per id.)

local L = require("legacy_common")
L.dataset = "C"

local q
function prepare_statements()
  if drv:name() == "pgsql" and sysbench.opt.auto_inc then
    q = L.prepare("INSERT INTO sbtest VALUES (DEFAULT,?,?,?)",
                  L.INT, L.CHAR120, L.CHAR60)
  else
    q = L.prepare("INSERT INTO sbtest VALUES (?,?,?,?)",
                  L.INT, L.INT, L.CHAR120, L.CHAR60)
  end
end

function event()
  local k, c, pad = L.id(), L.c_value(), L.pad_value()
  if drv:name() == "pgsql" and sysbench.opt.auto_inc then
    L.exec(q, k, c, pad)
  elseif sysbench.opt.auto_inc then
    L.exec(q, L.NULL, k, c, pad)
  else
    local id = sysbench.rand.unique()
    if drv:name() ~= "mysql" then id = id - 2147483648 end
    L.exec(q, id, k, c, pad)
  end
end
