-- A bulk insert of about 800 KB per event through the sysbench 1.0 API
-- (con:bulk_insert_init/next/done), as yugabyte/sysbench's
-- oltp_multi_value_insert.lua sends them: sysbench cuts it into INSERT
-- statements of at most 512 KiB, and `run` counts each one as a write.
-- dbbench must count the same however it sends the rows (tests/golden.rs).

local pad = string.rep("x", 90)
local con
local next_id = 0

function prepare()
  local c = sysbench.sql.driver():connect()
  c:query("CREATE TABLE big_bulk (id INTEGER NOT NULL, v VARCHAR(100) NOT NULL)")
  c:disconnect()
end

function cleanup()
  local c = sysbench.sql.driver():connect()
  c:query("DROP TABLE IF EXISTS big_bulk")
  c:disconnect()
end

function thread_init()
  con = sysbench.sql.driver():connect()
end

function thread_done()
  con:disconnect()
end

function event()
  con:bulk_insert_init("INSERT INTO big_bulk(id, v) VALUES")
  for _ = 1, 8000 do
    next_id = next_id + 1
    con:bulk_insert_next(string.format("(%d,'%s')", next_id, pad))
  end
  con:bulk_insert_done()
end
