-- dbbench: select.lua (sysbench 0.5-era workload, 1.0 API)
-- Table sbtest, dataset A (see legacy_common.lua).
-- Per event: one prepared `SELECT pad FROM sbtest WHERE id = ?`.  r/w/o = 1/0/0.

local L = require("legacy_common")
L.dataset = "A"

local q
function prepare_statements()
  q = L.prepare("SELECT pad FROM sbtest WHERE id = ?", L.INT)
end

function event() L.exec(q, L.id()) end
