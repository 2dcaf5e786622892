-- A sysbench 0.5-style script (written for dbbench's tests): no declared
-- options, options read as global strings, the db_* API, sb_rand* globals,
-- thread_init(thread_id) / event(thread_id). Per event: BEGIN, 2 point
-- selects through a prepared statement bound to a table, 1 UPDATE, COMMIT.

function set_vars()
  table_size = tonumber(oltp_table_size) or 100
  points = tonumber(points) or 2
end

function prepare()
  set_vars()
  db_connect()
  db_query("CREATE TABLE sbtest05 (id INTEGER NOT NULL PRIMARY KEY, k INTEGER NOT NULL, c CHAR(20) NOT NULL)")
  db_bulk_insert_init("INSERT INTO sbtest05 (id, k, c) VALUES")
  for i = 1, table_size do
    db_bulk_insert_next("(" .. i .. ", " .. sb_rand(1, table_size) .. ", '" .. sb_rand_str("##########") .. "')")
  end
  db_bulk_insert_done()
  db_disconnect()
end

function cleanup()
  db_query("DROP TABLE sbtest05")
end

function thread_init(thread_id)
  set_vars()
  assert(thread_id == sysbench.tid)
  local u = sb_rand_uniq(1, 1000000000)
  assert(u >= 1 and u <= 1000000000 and sb_rnd() >= 0)
  select_stmt = db_prepare("SELECT c FROM sbtest05 WHERE id = ?")
  select_params = { 1 }
  db_bind_param(select_stmt, select_params)
  update_stmt = db_prepare("UPDATE sbtest05 SET c = ? WHERE id = ?")
  update_params = { "x", 1 }
  db_bind_param(update_stmt, update_params)
end

function event(thread_id)
  db_query("BEGIN")
  for i = 1, points do
    select_params[1] = sb_rand_uniform(1, table_size)
    local rs = db_execute(select_stmt)
    db_store_results(rs)
    db_free_results(rs)
  end
  update_params[1] = sb_rand_str("@@@@@@@@@@")
  update_params[2] = sb_rand(1, table_size)
  db_execute(update_stmt)
  db_query("COMMIT")
end

function thread_done(thread_id)
  db_close(select_stmt)
  db_close(update_stmt)
  db_disconnect()
end
