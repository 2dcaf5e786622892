-- dbbench: oltp_common.lua
-- Shared code of the sysbench-1.0.20-compatible OLTP workloads: options, the
-- sbtest{N} schema and data, the parallel `prepare` and `prewarm` commands,
-- `cleanup`, per-thread connection with prepared statements, and the statement
-- groups the oltp_* scripts combine in their event().
--
-- The global names (prepare_point_selects, execute_index_updates, get_id, con,
-- stmt, param, create_table, ...) are the ones sysbench's oltp_common exposes,
-- so third-party scripts that `require("oltp_common")` keep working. A script
-- supplies prepare_statements() (called from thread_init) and event().
--
-- Determinism (dbbench): dbbench seeds every Lua state's sysbench.rand from
-- (--rand-seed, phase, thread id), so `prepare` loads identical data for a
-- given seed. That only holds because all data here comes from sysbench.rand.*:
-- never use math.random, and never rand.unique() during prepare.

if sysbench.cmdline.command == nil then
  error("Command is required. Supported commands: prepare, prewarm, run, " ..
        "cleanup, help")
end

sysbench.cmdline.options = {
  table_size = {"Number of rows per table", 10000},
  range_size = {"Range size for range SELECT queries", 100},
  tables = {"Number of tables", 1},
  point_selects = {"Number of point SELECT queries per transaction", 10},
  simple_ranges = {"Number of simple range SELECT queries per transaction", 1},
  sum_ranges = {"Number of SELECT SUM() queries per transaction", 1},
  order_ranges = {"Number of SELECT ORDER BY queries per transaction", 1},
  distinct_ranges = {"Number of SELECT DISTINCT queries per transaction", 1},
  index_updates = {"Number of UPDATE index queries per transaction", 1},
  non_index_updates = {"Number of UPDATE non-index queries per transaction", 1},
  delete_inserts = {"Number of DELETE/INSERT combinations per transaction", 1},
  range_selects = {"Enable/disable all range SELECT queries", true},
  auto_inc = {"Use AUTO_INCREMENT column as Primary Key (for MySQL), or its " ..
              "alternatives in other DBMS. When disabled, use " ..
              "client-generated IDs", true},
  skip_trx = {"Don't start explicit transactions and execute all queries " ..
              "in the AUTOCOMMIT mode", false},
  secondary = {"Use a secondary index in place of the PRIMARY KEY", false},
  create_secondary = {"Create a secondary index in addition to the PRIMARY KEY",
                      true},
  reconnect = {"Reconnect after every N events. The default (0) is to not reconnect", 0},
  mysql_storage_engine = {"Storage engine, if MySQL is used", "innodb"},
  pgsql_variant = {"Use this PostgreSQL variant when running with the " ..
                   "PostgreSQL driver. The only currently supported variant " ..
                   "is 'redshift'. When enabled, create_secondary is " ..
                   "automatically disabled, and delete_inserts is set to 0"},
}

-- dbbench: the values these options may take, checked once before any
-- command (sysbench passes anything on: --table-size=1e23 "inserted"
-- -9223372036854775808 rows). Ids are INTEGER columns, hence 2^31-1.
local INT_MAX = 2147483647
sysbench.cmdline.option_ranges = {
  table_size = {0, INT_MAX}, range_size = {0, INT_MAX}, tables = {1, INT_MAX},
  point_selects = {0, INT_MAX}, simple_ranges = {0, INT_MAX}, sum_ranges = {0, INT_MAX},
  order_ranges = {0, INT_MAX}, distinct_ranges = {0, INT_MAX}, index_updates = {0, INT_MAX},
  non_index_updates = {0, INT_MAX}, delete_inserts = {0, INT_MAX}, reconnect = {0, INT_MAX},
}

-- c: 10 groups of 11 digits joined by '-' (119 chars); pad: 5 groups (59).
local function digit_groups(n)
  local g = {}
  for i = 1, n do g[i] = string.rep("#", 11) end
  return table.concat(g, "-")
end
local C_FMT, PAD_FMT = digit_groups(10), digit_groups(5)

function get_c_value() return sysbench.rand.string(C_FMT) end
function get_pad_value() return sysbench.rand.string(PAD_FMT) end
function get_table_num() return sysbench.rand.uniform(1, sysbench.opt.tables) end
function get_id() return sysbench.rand.default(1, sysbench.opt.table_size) end
local std_get_id, std_get_c_value, std_get_pad_value = get_id, get_c_value, get_pad_value

-- --pgsql_variant=redshift (a silent no-op in sysbench 1.0.20; dbbench does
-- what the help text promises). Writes to sysbench.opt are state-local.
local function apply_pgsql_variant(drv)
  if drv:name() == "pgsql" and sysbench.opt.pgsql_variant == "redshift" then
    sysbench.opt.create_secondary = false
    sysbench.opt.delete_inserts = 0
  end
end

-- Table numbers handled by this thread of a parallel command:
-- thread t gets t+1, t+1+threads, t+1+2*threads, ...
local function my_tables()
  local threads = sysbench.opt.threads
  local n = sysbench.tid % threads + 1 - threads
  return function()
    n = n + threads
    if n <= sysbench.opt.tables then return n end
  end
end

-- SQLite has a rowid-alias id only with PRIMARY KEY(id); with --secondary the
-- client must supply ids even when auto_inc is on.
local function explicit_ids(drv)
  return not sysbench.opt.auto_inc or
         (drv:name() == "sqlite" and sysbench.opt.secondary)
end

function create_table(drv, con, table_num)
  local o, dbms, t = sysbench.opt, drv:name(), table_num
  local id_def, tail
  if dbms == "mysql" then
    id_def = o.auto_inc and "INTEGER NOT NULL AUTO_INCREMENT" or "INTEGER NOT NULL"
    tail = " /*! ENGINE = " .. o.mysql_storage_engine .. " */"
  elseif dbms == "pgsql" then
    id_def = o.auto_inc and "SERIAL" or "INTEGER NOT NULL"
    tail = ""
  elseif dbms == "sqlite" then
    -- "INTEGER ... PRIMARY KEY (id)" makes id the rowid: ids auto-assign
    id_def, tail = "INTEGER NOT NULL", ""
  else
    error("Unsupported database driver: " .. dbms)
  end

  -- MySQL alone understands an inline "KEY xid (id)"; elsewhere --secondary
  -- becomes a separate CREATE INDEX.
  local key
  if not o.secondary then key = ",\n  PRIMARY KEY (id)"
  elseif dbms == "mysql" then key = ",\n  KEY xid (id)"
  else key = "" end

  print(string.format("Creating table 'sbtest%d'...", t))
  con:query(string.format([[
CREATE TABLE sbtest%d(
  id %s,
  k INTEGER DEFAULT '0' NOT NULL,
  c CHAR(120) DEFAULT '' NOT NULL,
  pad CHAR(60) DEFAULT '' NOT NULL%s
)%s]], t, id_def, key, tail))
  if o.secondary and dbms ~= "mysql" then
    con:query(string.format("CREATE INDEX xid_%d ON sbtest%d(id)", t, t))
  end

  if o.table_size > 0 then
    print(string.format("Inserting %d records into 'sbtest%d'", o.table_size, t))
  end
  local with_id = explicit_ids(drv)
  local prefix = string.format("INSERT INTO sbtest%d(%sk, c, pad) VALUES",
                               t, with_id and "id, " or "")
  if o.table_size > 0 and get_id == std_get_id and
     get_c_value == std_get_c_value and get_pad_value == std_get_pad_value then
    -- dbbench: the rows of the loop below, drawn in the same order and
    -- built by dbbench: one LOAD DATA LOCAL / COPY per table (or that
    -- loop's INSERTs with --db-bulk-load=off or on SQLite).
    con:bulk_insert_sbtest(prefix, o.table_size, with_id, o.table_size, C_FMT, PAD_FMT)
  else
    con:bulk_insert_init(prefix)
    for i = 1, o.table_size do
      local k, c, pad = get_id(), get_c_value(), get_pad_value()
      if with_id then
        con:bulk_insert_next(string.format("(%d, %d, '%s', '%s')", i, k, c, pad))
      else
        con:bulk_insert_next(string.format("(%d, '%s', '%s')", k, c, pad))
      end
    end
    con:bulk_insert_done()
  end

  if o.create_secondary then
    print(string.format("Creating a secondary index on 'sbtest%d'...", t))
    con:query(string.format("CREATE INDEX k_%d ON sbtest%d(k)", t, t))
  end
end

function cmd_prepare()
  local drv = sysbench.sql.driver()
  local con = drv:connect()
  apply_pgsql_variant(drv)
  for t in my_tables() do create_table(drv, con, t) end
  con:disconnect()
end

-- Load each table's rows and primary index into the caches (MySQL only).
function cmd_prewarm()
  local drv = sysbench.sql.driver()
  if drv:name() ~= "mysql" then error("prewarm is currently MySQL only") end
  local con = drv:connect()
  con:query("SET tmp_table_size=2*1024*1024*1024")
  con:query("SET max_heap_table_size=2*1024*1024*1024")
  local size = sysbench.opt.table_size
  for t in my_tables() do
    print(string.format("Prewarming table sbtest%d", t))
    con:query("ANALYZE TABLE sbtest" .. t)
    con:query(string.format("SELECT AVG(id) FROM (SELECT * FROM sbtest%d " ..
                            "FORCE KEY (PRIMARY) LIMIT %d) t", t, size))
    con:query(string.format("SELECT COUNT(*) FROM (SELECT * FROM sbtest%d " ..
                            "WHERE k LIKE '%%0%%' LIMIT %d) t", t, size))
  end
  con:disconnect()
end

sysbench.cmdline.commands = {
  prepare = {cmd_prepare, sysbench.cmdline.PARALLEL_COMMAND},
  prewarm = {cmd_prewarm, sysbench.cmdline.PARALLEL_COMMAND},
}

function cleanup()
  local con = sysbench.sql.driver():connect()
  for t = 1, sysbench.opt.tables do
    print(string.format("Dropping table 'sbtest%d'...", t))
    con:query("DROP TABLE IF EXISTS sbtest" .. t)
  end
  con:disconnect()
end

function init()
  assert(event ~= nil, "this script is meant to be included by other OLTP " ..
         "scripts and should not be called directly.")
end

---------------------------------------------------------------------------
-- Prepared statements: stmt[table][kind] / param[table][kind] per worker.

local T = sysbench.sql.type
local CHAR120, CHAR60 = {T.CHAR, 120}, {T.CHAR, 60}

stmt_defs = {
  point_selects = {"SELECT c FROM sbtest%u WHERE id=?", T.INT},
  simple_ranges = {"SELECT c FROM sbtest%u WHERE id BETWEEN ? AND ?",
                   T.INT, T.INT},
  sum_ranges = {"SELECT SUM(k) FROM sbtest%u WHERE id BETWEEN ? AND ?",
                T.INT, T.INT},
  order_ranges = {"SELECT c FROM sbtest%u WHERE id BETWEEN ? AND ? ORDER BY c",
                  T.INT, T.INT},
  distinct_ranges = {"SELECT DISTINCT c FROM sbtest%u WHERE id BETWEEN ? AND ? " ..
                     "ORDER BY c", T.INT, T.INT},
  index_updates = {"UPDATE sbtest%u SET k=k+1 WHERE id=?", T.INT},
  non_index_updates = {"UPDATE sbtest%u SET c=? WHERE id=?", CHAR120, T.INT},
  deletes = {"DELETE FROM sbtest%u WHERE id=?", T.INT},
  inserts = {"INSERT INTO sbtest%u (id, k, c, pad) VALUES (?, ?, ?, ?)",
             T.INT, T.INT, CHAR120, CHAR60},
}

stmt, param, trx = {}, {}, {}

-- Prepare `kind` from stmt_defs for every table (all are used at random).
function prepare_for_each_table(kind)
  local def = stmt_defs[kind]
  for t = 1, sysbench.opt.tables do
    stmt[t] = stmt[t] or {}
    param[t] = param[t] or {}
    local st = con:prepare(string.format(def[1], t))
    local p = {}
    for i = 2, #def do
      local ty = def[i]
      if type(ty) == "table" then p[i - 1] = st:bind_create(ty[1], ty[2])
      else p[i - 1] = st:bind_create(ty) end
    end
    if #p > 0 then st:bind_param(unpack(p)) end
    stmt[t][kind], param[t][kind] = st, p
  end
end

-- SQLite (dbbench): a deferred transaction that later writes must upgrade
-- its lock, and two such transactions deadlock (SQLite returns BUSY at once,
-- the event restarts). Transactions that will write take the write lock at
-- BEGIN instead: measured with 2 clients, oltp_read_write restarted 63% of
-- its events with BEGIN and none with BEGIN IMMEDIATE (+32% tps), while
-- read-only transactions stay deferred so that readers run concurrently.
function prepare_begin(writes)
  local sql = (writes and drv:name() == "sqlite") and "BEGIN IMMEDIATE" or "BEGIN"
  trx.begin = con:prepare(sql)
end
function prepare_commit() trx.commit = con:prepare("COMMIT") end
function prepare_point_selects() prepare_for_each_table("point_selects") end
function prepare_simple_ranges() prepare_for_each_table("simple_ranges") end
function prepare_sum_ranges() prepare_for_each_table("sum_ranges") end
function prepare_order_ranges() prepare_for_each_table("order_ranges") end
function prepare_distinct_ranges() prepare_for_each_table("distinct_ranges") end
function prepare_index_updates() prepare_for_each_table("index_updates") end
function prepare_non_index_updates() prepare_for_each_table("non_index_updates") end
function prepare_delete_inserts()
  prepare_for_each_table("deletes")
  prepare_for_each_table("inserts")
end

function close_statements()
  for _, kinds in pairs(stmt) do
    for _, st in pairs(kinds) do st:close() end
  end
  for _, st in pairs(trx) do st:close() end
  stmt, param, trx = {}, {}, {}
end

function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
  apply_pgsql_variant(drv)
  prepare_statements()   -- supplied by the workload script
end

function thread_done()
  close_statements()
  con:disconnect()
end

-- sysbench 1.1's --reconnect=N: a new connection, with the statements
-- prepared again, after every N events of this thread. The oltp_* events
-- call it last.
local events_since_reconnect = 0
function check_reconnect()
  local n = sysbench.opt.reconnect
  if n > 0 then
    events_since_reconnect = events_since_reconnect + 1
    if events_since_reconnect >= n then
      events_since_reconnect = 0
      close_statements()
      con:reconnect()
      prepare_statements()
    end
  end
end

-- The driver reconnects on these errors (if listed in --mysql-ignore-errors);
-- statements of the old connection are gone, so prepare them again.
function sysbench.hooks.before_restart_event(err)
  local e = err.sql_errno
  if e == 2013 or e == 2055 or e == 2006 or e == 2011 then
    close_statements()
    prepare_statements()
  end
end

---------------------------------------------------------------------------
-- Statement groups. Each group picks one random table for all its queries.

function begin() trx.begin:execute() end
function commit() trx.commit:execute() end

function execute_point_selects()
  local t = get_table_num()
  local st, p = stmt[t].point_selects, param[t].point_selects
  for _ = 1, sysbench.opt.point_selects do
    p[1]:set(get_id())
    st:execute()
  end
end

-- `kind` in simple_ranges/sum_ranges/order_ranges/distinct_ranges:
-- sysbench.opt[kind] queries over [id, id + range_size - 1].
function execute_range(kind)
  local t = get_table_num()
  local st, p = stmt[t][kind], param[t][kind]
  for _ = 1, sysbench.opt[kind] do
    local id = get_id()
    p[1]:set(id)
    p[2]:set(id + sysbench.opt.range_size - 1)
    st:execute()
  end
end

function execute_simple_ranges() execute_range("simple_ranges") end
function execute_sum_ranges() execute_range("sum_ranges") end
function execute_order_ranges() execute_range("order_ranges") end
function execute_distinct_ranges() execute_range("distinct_ranges") end

function execute_index_updates()
  local t = get_table_num()
  local st, p = stmt[t].index_updates, param[t].index_updates
  for _ = 1, sysbench.opt.index_updates do
    p[1]:set(get_id())
    st:execute()
  end
end

function execute_non_index_updates()
  local t = get_table_num()
  local st, p = stmt[t].non_index_updates, param[t].non_index_updates
  for _ = 1, sysbench.opt.non_index_updates do
    p[1]:set(get_c_value())
    p[2]:set(get_id())
    st:execute()
  end
end

-- DELETE a random row, then INSERT it back under the same id with new data.
function execute_delete_inserts()
  local t = get_table_num()
  local del, ins = param[t].deletes, param[t].inserts
  for _ = 1, sysbench.opt.delete_inserts do
    local id, k = get_id(), get_id()
    del[1]:set(id)
    ins[1]:set(id)
    ins[2]:set(k)
    ins[3]:set(get_c_value())
    ins[4]:set(get_pad_value())
    stmt[t].deletes:execute()
    stmt[t].inserts:execute()
  end
end

---------------------------------------------------------------------------
-- The read/write mixes of oltp_read_only, oltp_read_write, oltp_write_only.

function prepare_mix(reads, writes)
  if not sysbench.opt.skip_trx then prepare_begin(writes); prepare_commit() end
  if reads then
    prepare_point_selects()
    if sysbench.opt.range_selects then
      prepare_simple_ranges(); prepare_sum_ranges()
      prepare_order_ranges(); prepare_distinct_ranges()
    end
  end
  if writes then
    prepare_index_updates(); prepare_non_index_updates()
    prepare_delete_inserts()
  end
end

function execute_mix(reads, writes)
  if not sysbench.opt.skip_trx then begin() end
  if reads then
    execute_point_selects()
    if sysbench.opt.range_selects then
      execute_simple_ranges(); execute_sum_ranges()
      execute_order_ranges(); execute_distinct_ranges()
    end
  end
  if writes then
    execute_index_updates(); execute_non_index_updates()
    execute_delete_inserts()
  end
  if not sysbench.opt.skip_trx then commit() end
end

---------------------------------------------------------------------------
-- select_random_points/_ranges: this thread's k slice [L*tid, L*(tid+1)],
-- L = table_size/threads (fractional; rand.* truncates its arguments).
function thread_slice()
  local len = sysbench.opt.table_size / sysbench.opt.threads
  local lo = len * (sysbench.tid % sysbench.opt.threads)
  return lo, lo + len
end
