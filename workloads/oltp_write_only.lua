-- dbbench: oltp_write_only.lua (sysbench 1.0.20 compatible)
-- Write-only OLTP transaction on sbtest1..N (see oltp_common.lua).
-- Per event: BEGIN; --index_updates UPDATE k=k+1; --non_index_updates UPDATE c;
-- --delete_inserts DELETE + re-INSERT pairs; COMMIT.  Defaults: r/w/o = 0/4/2.

require("oltp_common")

function prepare_statements() prepare_mix(false, true) end

function event() execute_mix(false, true); check_reconnect() end
