-- dbbench: legacy_common.lua
-- Shared code of the sysbench 0.5-era workloads (oltp_simple, select,
-- oltp_complex_ro/rw, update_index, update_non_index, insert, delete and the
-- legacy_select_random_* pair), re-written for the 1.0 API. They reproduce
-- the early 0.5 scripts used in MariaDB's published benchmark runs: one table
-- `sbtest` (no number) in one of three datasets, set by the script:
--   A: k = 0, c = ' ', pad = 'qqqqqqqqqqwwwwwwwwwweeeeeeeeeerrrrrrrrrrtttttttttt'
--   B: as A but k = id            C: as A but empty
-- Options use the 1.0 names (dbbench maps --oltp-table-size to --table_size,
-- --mysql-table-engine to --mysql_storage_engine, --oltp-X to --X, ...).
-- With --mysql_storage_engine=myisam (MySQL) transactions become
-- LOCK TABLES sbtest READ|WRITE ... UNLOCK TABLES.
-- Determinism: data and ids come from sysbench.rand.* only, which dbbench
-- seeds from (--rand-seed, phase, thread id).

if sysbench.cmdline.command == nil then
  error("Command is required. Supported commands: prepare, run, cleanup, help")
end

sysbench.cmdline.options = {
  table_size = {"Number of rows in table sbtest", 10000},
  range_size = {"Range size for range SELECT queries", 100},
  point_selects = {"Number of point SELECT queries per transaction", 10},
  simple_ranges = {"Number of simple range SELECT queries per transaction", 1},
  sum_ranges = {"Number of SELECT SUM() queries per transaction", 1},
  order_ranges = {"Number of SELECT ORDER BY queries per transaction", 1},
  distinct_ranges = {"Number of SELECT DISTINCT queries per transaction", 1},
  index_updates = {"Number of UPDATE index queries per transaction", 1},
  non_index_updates = {"Number of UPDATE non-index queries per transaction", 1},
  delete_inserts = {"Number of DELETE/INSERT combinations per transaction", 1},
  auto_inc = {"Use AUTO_INCREMENT (MySQL), SERIAL (PostgreSQL) or rowid " ..
              "(SQLite) ids; when disabled, use client-generated IDs", true},
  mysql_storage_engine = {"Storage engine, if MySQL is used", "innodb"},
  -- 0.5's --myisam-max-rows: the table's MAX_ROWS. MyISAM sizes its row
  -- pointers by it: the default 1000000 gives 3-byte pointers, a table
  -- that is full at 16777215 fixed-length rows.
  myisam_max_rows = {"max-rows parameter for MyISAM tables", 1000000},
}

-- dbbench: the values these options may take, checked once before any
-- command. Ids are INTEGER columns, hence 2^31-1.
local INT_MAX = 2147483647
sysbench.cmdline.option_ranges = {
  table_size = {0, INT_MAX}, range_size = {0, INT_MAX}, point_selects = {0, INT_MAX},
  simple_ranges = {0, INT_MAX}, sum_ranges = {0, INT_MAX}, order_ranges = {0, INT_MAX},
  distinct_ranges = {0, INT_MAX}, index_updates = {0, INT_MAX}, non_index_updates = {0, INT_MAX},
  delete_inserts = {0, INT_MAX},
}

local L = {dataset = "A"}

local T = sysbench.sql.type
L.INT, L.CHAR120, L.CHAR60 = T.INT, {T.CHAR, 120}, {T.CHAR, 60}

local PAD_A = "qqqqqqqqqqwwwwwwwwwweeeeeeeeeerrrrrrrrrrtttttttttt"
local C_FMT = string.rep("###########-", 9) .. "###########"       -- 119 chars
local PAD_FMT = string.rep("###########-", 4) .. "###########"     -- 59 chars

function L.id() return sysbench.rand.default(1, sysbench.opt.table_size) end
function L.c_value() return sysbench.rand.string(C_FMT) end
function L.pad_value() return sysbench.rand.string(PAD_FMT) end

local function myisam(drv)
  return drv:name() == "mysql" and
         sysbench.opt.mysql_storage_engine:lower() == "myisam"
end

function prepare()
  local drv = sysbench.sql.driver()
  local con = drv:connect()
  local dbms, o = drv:name(), sysbench.opt
  local ddl
  if dbms == "mysql" then
    ddl = "CREATE TABLE sbtest (id INTEGER UNSIGNED NOT NULL" ..
          (o.auto_inc and " AUTO_INCREMENT" or "") ..
          ", k INTEGER UNSIGNED DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' " ..
          "NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id)) " ..
          "/*! ENGINE = " .. o.mysql_storage_engine .. " MAX_ROWS = " ..
          o.myisam_max_rows .. " */"
  elseif dbms == "pgsql" or dbms == "sqlite" then
    -- SQLite: "id INTEGER ... PRIMARY KEY (id)" is the auto-assigned rowid
    local id_def = (dbms == "pgsql" and o.auto_inc) and "SERIAL"
                   or "INTEGER NOT NULL"
    ddl = "CREATE TABLE sbtest (id " .. id_def .. ", k INTEGER DEFAULT '0' " ..
          "NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' " ..
          "NOT NULL, PRIMARY KEY (id))"
  else
    error("Unsupported database driver: " .. dbms)
  end
  print("Creating table 'sbtest'...")
  con:query(ddl)
  con:query("CREATE INDEX k on sbtest(k)")

  if L.dataset ~= "C" and o.table_size > 0 then
    print(string.format("Inserting %d records into 'sbtest'", o.table_size))
    -- ids are 1..N either way: explicit, or assigned in order on a new table
    con:bulk_insert_init("INSERT INTO sbtest(" ..
                         (o.auto_inc and "" or "id, ") .. "k, c, pad) VALUES")
    for i = 1, o.table_size do
      local k = L.dataset == "B" and i or 0
      if o.auto_inc then
        con:bulk_insert_next(string.format("(%d,' ','%s')", k, PAD_A))
      else
        con:bulk_insert_next(string.format("(%d,%d,' ','%s')", i, k, PAD_A))
      end
    end
    con:bulk_insert_done()
  end
  con:disconnect()
end

function cleanup()
  local con = sysbench.sql.driver():connect()
  print("Dropping table 'sbtest'...")
  con:query("DROP TABLE sbtest")
  con:disconnect()
end

function init()
  assert(event ~= nil, "legacy_common is meant to be included by the " ..
         "0.5-era workload scripts and should not be called directly.")
end

---------------------------------------------------------------------------
-- Prepared statements. L.prepare(sql, types...) returns a handle for
-- L.exec(handle, values...); handles survive a reconnect (re-prepared).

local handles = {}

local function build(h)
  h.st = con:prepare(h.sql)
  h.p = {}
  for i, ty in ipairs(h.types) do
    if type(ty) == "table" then h.p[i] = h.st:bind_create(ty[1], ty[2])
    else h.p[i] = h.st:bind_create(ty) end
  end
  if #h.p > 0 then h.st:bind_param(unpack(h.p)) end
end

function L.prepare(sql, ...)
  local h = {sql = sql, types = {...}}
  build(h)
  handles[#handles + 1] = h
  return h
end

-- Values are passed positionally; use L.NULL for an SQL NULL.
L.NULL = {}
function L.exec(h, ...)
  local v = {...}
  for i = 1, #h.p do
    if v[i] == L.NULL then h.p[i]:set(nil) else h.p[i]:set(v[i]) end
  end
  return h.st:execute()
end

function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
  L.myisam = myisam(drv)
  prepare_statements()   -- supplied by the workload script
end

function thread_done()
  for _, h in ipairs(handles) do h.st:close() end
  con:disconnect()
end

-- After the driver reconnected (errno listed in --mysql-ignore-errors), the
-- old connection's statements are gone: prepare them again.
function sysbench.hooks.before_restart_event(err)
  local e = err.sql_errno
  if e == 2013 or e == 2055 or e == 2006 or e == 2011 then
    for _, h in ipairs(handles) do h.st:close(); build(h) end
  end
end

---------------------------------------------------------------------------
-- oltp_complex_ro / oltp_complex_rw.

local Q = {}

function L.prepare_complex(rw)
  Q.point = L.prepare("SELECT c FROM sbtest WHERE id=?", L.INT)
  Q.simple = L.prepare("SELECT c FROM sbtest WHERE id BETWEEN ? AND ?",
                       L.INT, L.INT)
  Q.sum = L.prepare("SELECT SUM(K) FROM sbtest WHERE id BETWEEN ? AND ?",
                    L.INT, L.INT)
  Q.order = L.prepare("SELECT c FROM sbtest WHERE id BETWEEN ? AND ? ORDER BY c",
                      L.INT, L.INT)
  Q.distinct = L.prepare("SELECT DISTINCT c FROM sbtest WHERE id BETWEEN ? " ..
                         "AND ? ORDER BY c", L.INT, L.INT)
  if rw then
    Q.idx = L.prepare("UPDATE sbtest SET k=k+1 WHERE id=?", L.INT)
    Q.nonidx = L.prepare("UPDATE sbtest SET c=? WHERE id=?", L.CHAR120, L.INT)
    Q.del = L.prepare("DELETE FROM sbtest WHERE id=?", L.INT)
    Q.ins = L.prepare("INSERT INTO sbtest VALUES(?,0,' '," ..
                      "'aaaaaaaaaaffffffffffrrrrrrrrrreeeeeeeeeeyyyyyyyyyy')",
                      L.INT)
  end
end

local function ranges(h, n)
  for _ = 1, n do
    local x = L.id()
    L.exec(h, x, x + sysbench.opt.range_size - 1)
  end
end

function L.complex_event(rw)
  local o = sysbench.opt
  if L.myisam then
    con:query(rw and "LOCK TABLES sbtest WRITE" or "LOCK TABLES sbtest READ")
  else
    -- SQLite: writers take the write lock up front (see oltp_common.lua).
    con:query((rw and drv:name() == "sqlite") and "BEGIN IMMEDIATE" or "BEGIN")
  end
  for _ = 1, o.point_selects do L.exec(Q.point, L.id()) end
  ranges(Q.simple, o.simple_ranges)
  ranges(Q.sum, o.sum_ranges)
  ranges(Q.order, o.order_ranges)
  ranges(Q.distinct, o.distinct_ranges)
  if rw then
    for _ = 1, o.index_updates do L.exec(Q.idx, L.id()) end
    for _ = 1, o.non_index_updates do L.exec(Q.nonidx, L.c_value(), L.id()) end
    for _ = 1, o.delete_inserts do
      local id = L.id()
      L.exec(Q.del, id)
      L.exec(Q.ins, id)
    end
  end
  con:query(L.myisam and "UNLOCK TABLES" or "COMMIT")
end

-- legacy_select_random_*: this thread's k slice [L*tid, L*(tid+1)],
-- L = table_size/threads (dataset B has k = id).
function L.thread_slice()
  local len = sysbench.opt.table_size / sysbench.opt.threads
  local lo = len * (sysbench.tid % sysbench.opt.threads)
  return lo, lo + len
end

return L
