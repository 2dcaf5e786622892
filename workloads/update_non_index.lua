-- dbbench: update_non_index.lua (sysbench 0.5-era workload, 1.0 API)
-- Table sbtest, dataset A (see legacy_common.lua).
-- Per event: one prepared `UPDATE sbtest set c=? where id=?` with a new
-- random 119-character c.  r/w/o = 0/1/0.

local L = require("legacy_common")
L.dataset = "A"

local q
function prepare_statements()
  q = L.prepare("UPDATE sbtest set c=? where id=?", L.CHAR120, L.INT)
end

function event() L.exec(q, L.c_value(), L.id()) end
