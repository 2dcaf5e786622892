-- dbbench: oltp_read_only.lua (sysbench 1.0.20 compatible)
-- Read-only OLTP transaction on sbtest1..N (see oltp_common.lua).
-- Per event: BEGIN; --point_selects (10) point SELECTs; with --range_selects,
-- --simple_ranges/--sum_ranges/--order_ranges/--distinct_ranges (1 each)
-- range SELECTs; COMMIT.  Defaults: r/w/o = 14/0/2 (--skip_trx: no BEGIN/COMMIT).

require("oltp_common")

function prepare_statements() prepare_mix(true, false) end

function event() execute_mix(true, false); check_reconnect() end
