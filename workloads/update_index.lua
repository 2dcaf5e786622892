-- dbbench: update_index.lua (sysbench 0.5-era workload, 1.0 API)
-- Table sbtest, dataset A (see legacy_common.lua).
-- Per event: one prepared `UPDATE sbtest SET k=k+1 WHERE id = ?`.  r/w/o = 0/1/0.

local L = require("legacy_common")
L.dataset = "A"

local q
function prepare_statements()
  q = L.prepare("UPDATE sbtest SET k=k+1 WHERE id = ?", L.INT)
end

function event() L.exec(q, L.id()) end
