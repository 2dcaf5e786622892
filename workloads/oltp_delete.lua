-- dbbench: oltp_delete.lua (sysbench 1.0.20 compatible)
-- Per event: one prepared `DELETE FROM sbtest{t} WHERE id=?`, random table and
-- id, autocommit.  r/w/o = 0/1/0 while the row exists, 0/0/1 once deleted.

require("oltp_common")

function prepare_statements() prepare_for_each_table("deletes") end

function event()
  local t = get_table_num()
  param[t].deletes[1]:set(get_id())
  stmt[t].deletes:execute()
  check_reconnect()
end
