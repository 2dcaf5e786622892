-- dbbench: oltp_update_index.lua (sysbench 1.0.20 compatible)
-- Per event: --index_updates (1) `UPDATE sbtest{t} SET k=k+1 WHERE id=?` on
-- one random table, autocommit.  r/w/o = 0/1/0.

require("oltp_common")

function prepare_statements() prepare_index_updates() end

function event() execute_index_updates(); check_reconnect() end
