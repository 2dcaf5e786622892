-- dbbench: delete.lua (sysbench 0.5-era workload, 1.0 API)
-- Table sbtest, dataset A (see legacy_common.lua).
-- Per event: one prepared `DELETE FROM sbtest WHERE id = ?` on a random id.
-- r/w/o = 0/1/0 while the row exists, 0/0/1 once it is gone.

local L = require("legacy_common")
L.dataset = "A"

local q
function prepare_statements()
  q = L.prepare("DELETE FROM sbtest WHERE id = ?", L.INT)
end

function event() L.exec(q, L.id()) end
