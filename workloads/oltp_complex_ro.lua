-- dbbench: oltp_complex_ro.lua (sysbench 0.5-era workload, 1.0 API)
-- Table sbtest, dataset A (see legacy_common.lua).
-- Per event: BEGIN; 10 point SELECTs; 1 each simple / SUM(K) / ORDER BY /
-- DISTINCT range SELECT; COMMIT (MyISAM: LOCK TABLES sbtest READ ...
-- UNLOCK TABLES).  r/w/o = 14/0/2; counts follow --point_selects etc.

local L = require("legacy_common")
L.dataset = "A"

function prepare_statements() L.prepare_complex(false) end

function event() L.complex_event(false) end
