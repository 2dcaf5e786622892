-- dbbench: oltp_insert.lua (sysbench 1.0.20 compatible)
-- Per event: one unprepared INSERT of a new row (random k, c, pad) into a
-- random table, autocommit.  r/w/o = 0/1/0.
-- Ids: with --auto_inc the server assigns them (MySQL: id 0; PostgreSQL and
-- SQLite: id column omitted); otherwise rand.unique() - 2^31, distinct across
-- threads.  `prepare` creates empty tables when --auto_inc=off.

require("oltp_common")

sysbench.cmdline.commands.prepare = {
  function()
    if not sysbench.opt.auto_inc then sysbench.opt.table_size = 0 end
    cmd_prepare()
  end,
  sysbench.cmdline.PARALLEL_COMMAND
}

function prepare_statements() end   -- nothing to prepare

function event()
  local t = get_table_num()
  local k, c, pad = get_id(), get_c_value(), get_pad_value()
  local dbms = drv:name()
  if sysbench.opt.auto_inc and dbms ~= "mysql" and
     not (dbms == "sqlite" and sysbench.opt.secondary) then
    con:query(string.format("INSERT INTO sbtest%d (k, c, pad) VALUES " ..
                            "(%d, '%s', '%s')", t, k, c, pad))
  else
    local id = sysbench.opt.auto_inc and dbms == "mysql" and 0
               or sysbench.rand.unique() - 2147483648
    con:query(string.format("INSERT INTO sbtest%d (id, k, c, pad) VALUES " ..
                            "(%d, %d, '%s', '%s')", t, id, k, c, pad))
  end
  check_reconnect()
end
