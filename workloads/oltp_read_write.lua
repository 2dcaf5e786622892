-- dbbench: oltp_read_write.lua (sysbench 1.0.20 compatible)
-- Read/write OLTP transaction on sbtest1..N (see oltp_common.lua).
-- Per event: BEGIN; 10 point SELECTs; 4 range SELECTs (simple, SUM, ORDER BY,
-- DISTINCT); UPDATE k=k+1; UPDATE c; DELETE + re-INSERT of one row; COMMIT.
-- Defaults: r/w/o = 14/4/2; counts follow the per-kind options, --skip_trx
-- and --range_selects.

require("oltp_common")

function prepare_statements() prepare_mix(true, true) end

function event() execute_mix(true, true); check_reconnect() end
