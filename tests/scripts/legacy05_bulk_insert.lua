-- A sysbench 0.5-style bulk insert (written for dbbench's tests): prepare
-- creates one table per thread, sbtest0..num_threads-1; each thread
-- appends (n, n) rows to its own table through one multi-row INSERT,
-- finished in thread_done.

cursize = 0

function prepare()
  db_connect()
  for i = 0, num_threads - 1 do
    db_query("CREATE TABLE IF NOT EXISTS sbtest" .. i .. " (id INTEGER NOT NULL, k INTEGER DEFAULT '0' NOT NULL, PRIMARY KEY (id))")
  end
end

function event(thread_id)
  if cursize == 0 then
    db_bulk_insert_init("INSERT INTO sbtest" .. thread_id .. " VALUES")
  end
  cursize = cursize + 1
  db_bulk_insert_next("(" .. cursize .. "," .. cursize .. ")")
end

function thread_done(thread_id)
  db_bulk_insert_done()
end

function cleanup()
  for i = 0, num_threads - 1 do
    db_query("DROP TABLE IF EXISTS sbtest" .. i)
  end
end
