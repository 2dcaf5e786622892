-- A sysbench 0.5-style "random points" script (written for dbbench's
-- tests, after the documented 0.5 API): one table sbtest with k = id, and
-- each thread selects ten k values from its own slice of the table,
-- oltp_table_size / num_threads * thread_id .. * (thread_id + 1). It reads
-- the globals 0.5 exported: num_threads (the run's thread count),
-- oltp_table_size (a string option), db_driver, mysql_table_engine,
-- myisam_max_rows, thread_id.

function set_vars()
  oltp_table_size = oltp_table_size or 1000
  random_points = random_points or 10
end

function prepare()
  set_vars()
  db_connect()
  local ddl = "CREATE TABLE sbtest (id INTEGER NOT NULL, k INTEGER DEFAULT '0' NOT NULL, " ..
              "c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id))"
  if db_driver == "mysql" then
    ddl = ddl .. " /*! ENGINE = " .. mysql_table_engine .. " MAX_ROWS = " .. myisam_max_rows .. " */"
  end
  db_query(ddl)
  db_query("CREATE INDEX k on sbtest(k)")
  print("Inserting " .. oltp_table_size .. " records into 'sbtest'")
  db_bulk_insert_init("INSERT INTO sbtest(id, k, c, pad) VALUES")
  for i = 1, oltp_table_size do
    db_bulk_insert_next("(" .. i .. ", " .. i .. ", ' ', 'qqqqqqqqqqwwwwwwwwww')")
  end
  db_bulk_insert_done()
end

function cleanup()
  db_query("DROP TABLE sbtest")
end

function thread_init(thread_id)
  set_vars()
  local marks = {}
  for i = 1, random_points do marks[i] = "?" end
  stmt = db_prepare("SELECT id, k, c, pad FROM sbtest WHERE k IN (" .. table.concat(marks, ", ") .. ")")
  params = {}
  for i = 1, random_points do params[i] = 1 end
  db_bind_param(stmt, params)
  lo = oltp_table_size / num_threads * thread_id
  hi = oltp_table_size / num_threads * (thread_id + 1)
  print(string.format("slice %d of %d: %d..%d", thread_id, num_threads, lo, hi))
end

function event(thread_id)
  for i = 1, random_points do
    params[i] = sb_rand(lo, hi)
    assert(params[i] >= math.floor(lo) and params[i] <= hi, "a point outside the thread's slice")
  end
  local rs = db_execute(stmt)
  db_store_results(rs)
  db_free_results(rs)
end
