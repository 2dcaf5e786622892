-- dbbench: oltp_complex_rw.lua (sysbench 0.5-era workload, 1.0 API)
-- Table sbtest, dataset A (see legacy_common.lua).
-- Per event: BEGIN; the oltp_complex_ro reads; UPDATE k=k+1; UPDATE c;
-- DELETE of a random id and INSERT of (id, 0, ' ', 'aaaaaaaaaaff...yy');
-- COMMIT (MyISAM: LOCK TABLES sbtest WRITE ... UNLOCK TABLES).
-- r/w/o = 14/4/2; counts follow --point_selects, --index_updates etc.

local L = require("legacy_common")
L.dataset = "A"

function prepare_statements() L.prepare_complex(true) end

function event() L.complex_event(true) end
