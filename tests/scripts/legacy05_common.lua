-- Shared part of tests/scripts/legacy05_parallel_prepare.lua (0.5 style,
-- written for dbbench's tests): tables sbtest1..oltp_tables_count, each of
-- oltp_table_size rows.

function set_vars()
  oltp_table_size = tonumber(oltp_table_size) or 100
  oltp_tables_count = tonumber(oltp_tables_count) or 1
end

function create_insert(n)
  db_query("CREATE TABLE sbtest" .. n .. " (id INTEGER NOT NULL, k INTEGER NOT NULL, PRIMARY KEY (id))")
  db_bulk_insert_init("INSERT INTO sbtest" .. n .. " (id, k) VALUES")
  for i = 1, oltp_table_size do
    db_bulk_insert_next("(" .. i .. ", " .. sb_rand(1, oltp_table_size) .. ")")
  end
  db_bulk_insert_done()
end

function cleanup()
  set_vars()
  for n = 1, oltp_tables_count do db_query("DROP TABLE IF EXISTS sbtest" .. n) end
end
