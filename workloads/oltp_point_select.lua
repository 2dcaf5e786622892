-- dbbench: oltp_point_select.lua (sysbench 1.0.20 compatible)
-- Per event: one prepared `SELECT c FROM sbtest{t} WHERE id=?` on a random
-- table and id, no transaction.  r/w/o = 1/0/0 (--point_selects is forced to 1).

require("oltp_common")

function prepare_statements()
  sysbench.opt.point_selects = 1   -- this state only
  prepare_point_selects()
end

function event() execute_point_selects(); check_reconnect() end
