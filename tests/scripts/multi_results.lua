-- sysbench 1.1's multiple result sets (con:more_results, con:next_result),
-- written for dbbench's tests. Prints "mr: ..." lines the test checks.
function event() end
function init()
  local con = sysbench.sql.driver():connect()
  local rs = con:query("SELECT 1 AS a; SELECT 2, 3")
  print("mr: first", rs.nrows, rs.nfields, rs:fetch_row()[1], con:more_results())
  rs = con:next_result()
  print("mr: second", rs.nfields, rs:fetch_row()[2], con:more_results())
  print("mr: end", con:next_result())
  if sysbench.sql.driver():name() == "mysql" then
    con:query("DROP PROCEDURE IF EXISTS mr_proc")
    con:query("CREATE PROCEDURE mr_proc() BEGIN SELECT 10; SELECT 20, 30; END")
    rs = con:query("CALL mr_proc()")
    print("mr: call", rs:fetch_row()[1], con:next_result():fetch_row()[2])
    con:query("DROP PROCEDURE mr_proc")
  end
  print("mr: next query", con:query_row("SELECT 99"), con:more_results())
  -- A statement that needs the one before it in the same query.
  con:query("DROP TABLE IF EXISTS mr_t")
  con:query("CREATE TABLE mr_t (a INT); INSERT INTO mr_t VALUES (5)")
  print("mr: dependent", con:query_row("SELECT a FROM mr_t"))
  con:query("DROP TABLE mr_t")
end
