-- dbbench: bulk_insert.lua (sysbench 1.0.20 compatible)
-- Each thread appends rows (n, n), n = 1, 2, ... to its own table
-- sbtest{tid+1} through one multi-row INSERT that the driver flushes before it
-- would exceed 512 KiB: one write per flush, the last one in thread_done.
-- prepare/cleanup create/drop sbtest1..--threads.
-- Declares no options (legacy mode, like sysbench): `help` is not implemented.

function prepare()
  local con = sysbench.sql.driver():connect()
  for i = 1, sysbench.opt.threads do
    print(string.format("Creating table 'sbtest%d'...", i))
    con:query(string.format("CREATE TABLE IF NOT EXISTS sbtest%d (" ..
      "id INTEGER NOT NULL, k INTEGER DEFAULT '0' NOT NULL, PRIMARY KEY (id))", i))
  end
  con:disconnect()
end

function cleanup()
  local con = sysbench.sql.driver():connect()
  for i = 1, sysbench.opt.threads do
    print(string.format("Dropping table 'sbtest%d'...", i))
    con:query("DROP TABLE IF EXISTS sbtest" .. i)
  end
  con:disconnect()
end

local con, n

function thread_init()
  con = sysbench.sql.driver():connect()
  con:bulk_insert_init(string.format("INSERT INTO sbtest%d VALUES",
                                     sysbench.tid + 1))
  n = 0
end

function event()
  n = n + 1
  con:bulk_insert_next(string.format("(%d,%d)", n, n))
end

function thread_done()
  con:bulk_insert_done()
  con:disconnect()
end
