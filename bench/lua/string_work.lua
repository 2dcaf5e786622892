-- dbbench bench: a Lua-heavy workload (written for dbbench's benchmarks; it
-- runs unchanged under sysbench 1.0). Per event the client builds strings
-- with the random-string API, transforms, joins and scans them in Lua, and
-- runs one point SELECT whose text carries part of the result, so most of
-- the client's time is Lua rather than protocol.

sysbench.cmdline.options = {
  table_size = {"Number of rows per table", 10000},
  tables = {"Number of tables", 1},
  strings = {"Random strings built per event", 20},
}

local FMT = "###########-###########-@@@@@@@@@@"

function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
end

function event()
  local parts = {}
  for i = 1, sysbench.opt.strings do
    local s = sysbench.rand.string(FMT)
    parts[i] = (string.upper(s):gsub("-", "_"))
  end
  local joined = table.concat(parts, ",")
  local sum = 0
  for i = 1, #joined, 7 do
    sum = sum + string.byte(joined, i)
  end
  con:query(string.format("SELECT c FROM sbtest%d WHERE id = %d /* %d %s */",
                          sysbench.rand.uniform(1, sysbench.opt.tables),
                          sysbench.rand.uniform(1, sysbench.opt.table_size),
                          sum, string.sub(joined, 1, 16)))
end

function thread_done()
  con:disconnect()
end
