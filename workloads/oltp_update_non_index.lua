-- dbbench: oltp_update_non_index.lua (sysbench 1.0.20 compatible)
-- Per event: --non_index_updates (1) `UPDATE sbtest{t} SET c=? WHERE id=?`
-- (new random c) on one random table, autocommit.  r/w/o = 0/1/0.

require("oltp_common")

function prepare_statements() prepare_non_index_updates() end

function event() execute_non_index_updates(); check_reconnect() end
