-- dbbench's Lua side of the sysbench 1.0 API.
--
-- The Rust host creates `sysbench` with the primitives (`sysbench.rand.*`,
-- `sysbench._sql.*` handles, counters) before this file runs. This file adds
-- what is naturally Lua: the cmdline tables, hooks, the SQL object wrappers
-- and the error protocol (a table error with errcode RESTART_EVENT restarts
-- the event). Written for dbbench; it follows sysbench's documented API, not
-- its code.

local sb = sysbench
local raw = sb._sql
sb._sql = nil

-- The C functions sysbench scripts call through ffi.C (src/script/ffi.rs).
local ffi = require("ffi")
ffi.cdef(sb._cdef)
sb._cdef = nil

-- ---------------------------------------------------------------------------
-- Errors name the script's line, never this file's. The library functions
-- are kept in locals: a legacy script's options become globals (`debug`,
-- `help`, ...) and may shadow them.
local getinfo, getmetatable, setmetatable = debug.getinfo, getmetatable, setmetatable
local tostring, type, pairs, format = tostring, type, pairs, string.format
local sort, concat = table.sort, table.concat
local PRELUDE = "@dbbench/prelude.lua"

-- A frame of the script (or of a module it loaded), not of this file or C.
local function user_frame(info)
  return info.source ~= PRELUDE and info.what ~= "C" and info.what ~= "tail"
end

-- The `error` level that names the first frame outside this file, for an
-- error raised by the function that calls caller_level().
local function caller_level()
  local level = 3 -- 1: caller_level, 2: the raising function, 3: its caller
  while true do
    local info = getinfo(level, "S")
    if info == nil then return 1 end
    if user_frame(info) then return level - 1 end
    level = level + 1
  end
end

-- An error after it was described at the point it was raised (below); it
-- passes unchanged through the handlers further up.
local Described = {}
Described.__tostring = function(e) return e.text end

-- Short text of a table error object: its fields, sorted, nested tables
-- elided.
local function table_text(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  local parts = {}
  for i = 1, #keys do
    if i > 8 then parts[#parts + 1] = "..." break end
    local k, v = keys[i], t[keys[i]]
    local vt = type(v)
    local vs = vt == "string" and format("%q", v) or
               (vt == "number" or vt == "boolean") and tostring(v) or vt
    parts[#parts + 1] = tostring(k) .. " = " .. vs
  end
  return "{" .. concat(parts, ", ") .. "}"
end

local rust_error_text = sysbench._error_text
sysbench._error_text = nil

-- What an error object says, whatever it is.
local function error_text(e)
  local t = type(e)
  if t == "string" then return e end
  if t == "number" or t == "boolean" then return tostring(e) end
  if t == "nil" then return "error() called without a message (the error object is nil)" end
  if t == "table" then
    local mt = getmetatable(e)
    if mt ~= nil and mt.__tostring ~= nil then return tostring(e) end
    if e.sql_errno ~= nil or e.sql_errmsg ~= nil then
      return format("SQL error, errno = %d, state = '%s': %s", tonumber(e.sql_errno) or 0,
                    tostring(e.sql_state or ""), tostring(e.sql_errmsg or ""))
    end
    if type(e.message) == "string" then return e.message end
    if type(e.msg) == "string" then return e.msg end
    return "error object is a table without a message: " .. table_text(e)
  end
  if t == "userdata" then return rust_error_text(e) end
  return "error object is a " .. t
end

-- xpcall's message handler: runs where the error was raised, so the stack
-- is still there. The text gets the innermost script line when it has no
-- position (errors of C and Rust functions, error objects) or one in this
-- file; a traceback of the script's frames follows when there are two or
-- more of them.
local function describe(e)
  if getmetatable(e) == Described then return e end
  local text = error_text(e)
  local frames, level = {}, 2
  while true do
    local info = getinfo(level, "Sln")
    if info == nil then break end
    if user_frame(info) then frames[#frames + 1] = info end
    level = level + 1
  end
  local first = frames[1]
  if first ~= nil then
    local where = format("%s:%d: ", first.short_src, first.currentline)
    local own = text:match("^dbbench/prelude%.lua:%d+: (.*)$")
    if own ~= nil then
      text = where .. own
    elseif not text:match("^[^\n]-:%d+: ") then
      text = where .. text
    end
  end
  if #frames >= 2 then
    local lines = {text, "stack traceback:"}
    for _, f in ipairs(frames) do
      local what
      if f.namewhat ~= "" and f.name ~= nil then what = format("in %s '%s'", f.namewhat, f.name)
      elseif f.what == "main" then what = "in main chunk"
      else what = format("in function <%s:%d>", f.short_src, f.linedefined) end
      lines[#lines + 1] = format("\t%s:%d: %s", f.short_src, f.currentline, what)
    end
    text = concat(lines, "\n")
  end
  return setmetatable({text = text}, Described)
end

-- Calls f(...) for the host: true and f's results, or false and the
-- error's text.
local function host_result(ok, ...)
  if ok then return true, ... end
  local e = ...
  if getmetatable(e) == Described then return false, e.text end
  return false, error_text(e)
end
function sysbench._pcall(f, ...)
  return host_result(xpcall(f, describe, ...))
end

-- LuaJIT counts every tail call (`return f(x)`) recorded into a trace
-- against `loopunroll` (default 15) and aborts the trace beyond it. An
-- OLTP event's get_id() / sysbench.rand.* calls went past 15, and most of
-- each event then ran interpreted; with 60, oltp_read_only and
-- oltp_read_write events compile through (ARCHITECTURE.md, "The Lua hot
-- path"). A script that sets its own jit options overrides this.
jit.opt.start("loopunroll=60")

-- sysbench.rand over those C functions, as in sysbench: LuaJIT compiles an
-- ffi call into the trace of the script's loop, where a call to a Lua C
-- function would end the trace. Arguments convert as C's uint32_t does.
-- The results go through a local so that these wrappers add no tail
-- calls of their own to a script's count (see above).
local C = ffi.C
local rand = sb.rand
function rand.uniform(a, b) local r = C.sb_rand_uniform(a, b) return r end
function rand.gaussian(a, b) local r = C.sb_rand_gaussian(a, b) return r end
function rand.special(a, b) local r = C.sb_rand_special(a, b) return r end
function rand.pareto(a, b) local r = C.sb_rand_pareto(a, b) return r end
function rand.zipfian(a, b) local r = C.sb_rand_zipfian(a, b) return r end
function rand.default(a, b) local r = C.sb_rand_default(a, b) return r end
function rand.unique() local r = C.sb_rand_unique() return r end
function rand.uniform_uint64() local r = C.sb_rand_uniform_uint64() return r end
function rand.uniform_double() local r = C.sb_rand_uniform_double() return r end

-- One buffer per state for the generated strings.
local str_buf, str_cap = nil, 0
local function buffer(n)
  if n > str_cap then
    str_cap = math.max(n, 2 * str_cap, 64)
    str_buf = ffi.new("char[?]", str_cap)
  end
  return str_buf
end

function rand.string(fmt)
  local n = #fmt
  local buf = buffer(n)
  C.dbbench_rand_string(fmt, n, buf)
  local s = ffi.string(buf, n)
  return s
end

-- Lengths are checked here, before the buffer is sized: C would wrap a
-- negative or huge number into a length the buffer does not have.
function rand.varstring(min, max)
  min, max = tonumber(min), tonumber(max)
  if min == nil or max == nil or min < 0 or max < min or max > 4294967295 then
    error("sysbench.rand.varstring(min, max): need 0 <= min <= max < 2^32", caller_level())
  end
  min, max = math.floor(min), math.floor(max)
  local buf = buffer(max)
  local s = ffi.string(buf, C.sb_rand_varstr(buf, min, max))
  return s
end

sb.error = { NONE = 0, RESTART_EVENT = 1 }
sb.hooks = {}

sb.cmdline = sb.cmdline or {}
local cmdline = sb.cmdline
cmdline.ARG_NULL, cmdline.ARG_BOOL, cmdline.ARG_INT, cmdline.ARG_SIZE = 0, 1, 2, 3
cmdline.ARG_DOUBLE, cmdline.ARG_STRING, cmdline.ARG_LIST, cmdline.ARG_FILE, cmdline.ARG_MAX = 4, 5, 6, 7, 8
cmdline.PARALLEL_COMMAND = true
cmdline.options = nil
cmdline.commands = nil

function cmdline.command_defined(name)
  return type(cmdline.commands) == "table" and cmdline.commands[name] ~= nil
end

-- Options are read by the host before any callback runs; kept for
-- scripts that call it.
function cmdline.read_cmdline_options() return true end

-- Runs a custom command in this state, as the host would.
function cmdline.call_command(name)
  if not cmdline.command_defined(name) then
    error(string.format("unknown command '%s'", tostring(name)), caller_level())
  end
  return cmdline.commands[name][1]()
end

-- The script's option list, as `help` prints it.
cmdline.print_test_options = sb._print_test_options
sb._print_test_options = nil

function cmdline.command_parallel(name)
  local c = cmdline.command_defined(name) and cmdline.commands[name]
  return type(c) == "table" and c[2] == cmdline.PARALLEL_COMMAND
end

-- ---------------------------------------------------------------------------
-- SQL: thin wrappers over the Rust handles, adding sysbench's error protocol.

local sql = {}
sb.sql = sql
sql.type = { NONE = 0, TINYINT = 1, SMALLINT = 2, INT = 3, BIGINT = 4, FLOAT = 5, DOUBLE = 6,
             TIME = 7, DATE = 8, DATETIME = 9, TIMESTAMP = 10, CHAR = 11, VARCHAR = 12 }
sql.error = { NONE = 0, IGNORABLE = 1, FATAL = 2 }

local Driver, Connection, Statement = {}, {}, {}
Driver.__index, Connection.__index, Statement.__index = Driver, Connection, Statement

-- `err` comes from Rust: {sql_errno, sql_state, sql_errmsg, query, errcode}.
-- errcode is RESTART_EVENT when the driver classified the error as
-- ignorable (the Rust side has already rolled back / reconnected and counted
-- it); otherwise the script's sql_error_ignorable hook gets a say.
local function raise(con, err)
  con.sql_errno, con.sql_state, con.sql_errmsg = err.sql_errno, err.sql_state, err.sql_errmsg
  err.connection = con
  if err.errcode == sb.error.RESTART_EVENT then
    error(err, 0)
  end
  local hook = sb.hooks.sql_error_ignorable
  if hook ~= nil and hook(err) then
    err.errcode = sb.error.RESTART_EVENT
    error(err, 0)
  end
  if err.sql_errno == nil and (err.sql_state == nil or err.sql_state == "") then
    error("SQL API error", caller_level())
  end
  error(string.format("SQL error, errno = %d, state = '%s': %s",
                      err.sql_errno or 0, err.sql_state or "", err.sql_errmsg or ""), caller_level())
end

function sql.driver(name)
  local h = raw.driver(name)
  return setmetatable({ _h = h }, Driver)
end

function Driver:name() return self._h:name() end

function Driver:connect()
  local h = self._h:connect()
  return setmetatable({ _h = h, _rs = h:result_object(), sql_errno = 0, sql_state = "",
                        sql_errmsg = "" }, Connection)
end

function Connection:query(q)
  local rs, err = self._h:query(q)
  if err ~= nil then return raise(self, err) end
  return rs
end

function Connection:query_row(q)
  local rs = self:query(q)
  if rs == nil then return nil end
  local row = rs:fetch_row()
  if row == nil then return nil end
  return unpack(row, 1, rs.nfields)
end

function Connection:prepare(q)
  local h, err = self._h:prepare(q)
  if err ~= nil then return raise(self, err) end
  return setmetatable({ _h = h, _p = ffi.cast("void *", h:ptr()), _con = self }, Statement)
end

-- sysbench 1.1: the results after the first of one query (several
-- statements, a CALL), one at a time; nil when there are no more.
function Connection:more_results() return self._h:more_results() end
function Connection:next_result() return self._h:next_result() end

function Connection:disconnect() self._h:disconnect() end
function Connection:reconnect()
  local ok, err = self._h:reconnect()
  if err ~= nil then return raise(self, err) end
end
function Connection:check_error(rs, q) return rs end

-- Bulk insert: `{prefix} {t1},{t2},...` flushed before the statement would
-- exceed 512 KiB, and at done; each flush is one statement. With
-- --db-bulk-load=auto a flush of plain literals into a plain
-- `INSERT INTO t(cols) VALUES` goes through the driver's bulk load (LOAD
-- DATA LOCAL, COPY) instead, in flushes of 4 MiB (script/bulk.rs).
function Connection:bulk_insert_init(prefix)
  self._bulk_prefix, self._bulk, self._bulk_len = prefix, {}, #prefix + 1
  self._bulk_limit = self._h:bulk_begin(prefix)
end
local bulk_rows = sb._bulk_rows
sb._bulk_rows = nil
local function bulk_flush(self)
  if self._bulk ~= nil and #self._bulk > 0 then
    local n = #self._bulk
    local tuples = table.concat(self._bulk, ",")
    self._bulk, self._bulk_len = {}, #self._bulk_prefix + 1
    local _, err = self._h:bulk_insert(self._bulk_prefix, tuples)
    if err ~= nil then return raise(self, err) end
    bulk_rows(n)
  end
end
function Connection:bulk_insert_next(values)
  if self._bulk == nil then error("bulk_insert_next() called before bulk_insert_init()", caller_level()) end
  if self._bulk_len + #values + 1 > self._bulk_limit then bulk_flush(self) end
  local b = self._bulk
  b[#b + 1] = values
  self._bulk_len = self._bulk_len + #values + 1
end
function Connection:bulk_insert_done()
  bulk_flush(self)
  self._bulk, self._bulk_prefix = nil, nil
end
-- dbbench: oltp_common's rows (id?, k, c, pad) for ids 1..rows, drawn as
-- its Lua loop draws them, built and sent by dbbench (one bulk load per
-- table where the driver has one; else that loop's INSERT statements).
function Connection:bulk_insert_sbtest(prefix, rows, with_id, table_size, c_fmt, pad_fmt)
  local _, err = self._h:bulk_insert_sbtest(prefix, rows, with_id, table_size, c_fmt, pad_fmt)
  if err ~= nil then return raise(self, err) end
end

-- Statements and parameters run through the C functions dbbench_* (sql.rs)
-- in the common cases, so that a script's event loop stays compiled by
-- LuaJIT; `_h` is the handle that does everything else. `_p` is the
-- handle's pointer as a cdata: the JIT cannot pass a lightuserdata to C.
local Param = {}
Param.__index = Param

function Statement:bind_create(t, max_len)
  local h = self._h:bind_create(t, max_len)
  return setmetatable({ _h = h, _p = ffi.cast("void *", h:ptr()) }, Param)
end
function Statement:bind_param(...)
  local n = select("#", ...)
  local handles = {...}
  for i = 1, n do handles[i] = handles[i]._h end
  self._h:bind_param(unpack(handles, 1, n))
end
function Statement:execute()
  local r = C.dbbench_stmt_execute(self._p)
  if r == 1 then return self._con._rs end
  if r == 0 then return nil end
  if r == -1 then return raise(self._con, self._con._h:take_error()) end
  error("stmt:execute(): the statement or its connection is already in use", caller_level())
end

function Param:set(v)
  local t = type(v)
  if t == "number" then
    C.dbbench_param_set_number(self._p, v)
  elseif t == "string" then
    C.dbbench_param_set_string(self._p, v, #v)
  elseif v == nil then
    C.dbbench_param_set_null(self._p)
  elseif t == "cdata" and (ffi.istype("int64_t", v) or ffi.istype("uint64_t", v)) then
    C.dbbench_param_set_int64(self._p, v)
  else
    self._h:set(v)
  end
end
function Param:set_rand_str(fmt) self._h:set_rand_str(fmt) end
function Statement:close() self._h:close() end
function Statement:more_results() return self._con:more_results() end
function Statement:next_result() return self._con:next_result() end

-- ---------------------------------------------------------------------------
-- The default event loop (sysbench's own thread_run), run by each client
-- unless the script defines thread_run. The loop is Lua calling the C
-- functions of the engine, so LuaJIT can compile it together with the
-- script's event(). A RESTART_EVENT error calls before_restart_event and
-- re-runs the event (inside the same timing) unless the run is over
-- (dbbench_event_restart: --time passed, or another client failed; then
-- the event is dropped uncounted and the client stops); any other error
-- propagates and fails the run; a truthy return from event() ends this
-- client's loop without counting that event.
local RESTART = sb.error.RESTART_EVENT
-- Events until there are no more, unprotected: an event that returns
-- here returns into this loop, so LuaJIT can compile the loop and the
-- event into one trace. (A trace cannot return through a pcall frame, so
-- a pcall per event would cut every event's trace at its end.)
local function run_events(tid, more, start, stop)
  while more(tid) do
    start(tid)
    if event(tid) then return end
    stop(tid)
  end
end
-- The handler of the event loop: a restart error passes as it is (the
-- loop restarts the event); anything else is described where it was
-- raised, with the script's line and frames, before the loop rethrows it.
local function event_error(e)
  if type(e) == "table" and e.errcode == RESTART and getmetatable(e) == nil then return e end
  return describe(e)
end
function sb._thread_run(tid)
  local more, start, stop = C.sb_more_events, C.sb_event_start, C.sb_event_stop
  local restart = C.dbbench_event_restart
  while true do
    local ok, ret = xpcall(run_events, event_error, tid, more, start, stop)
    if ok then return end
    -- An error left an event that had started: restart it, or fail.
    while not ok do
      if type(ret) == "table" and ret.errcode == RESTART and getmetatable(ret) == nil then
        if not restart(tid) then return end
        local hook = sb.hooks.before_restart_event
        if hook ~= nil then hook(ret) end
        ok, ret = xpcall(event, event_error, tid)
      else
        error(ret, 0)
      end
    end
    if ret then return end
    stop(tid)
  end
end
-- sysbench defines the default as the global thread_run, which scripts
-- may keep and wrap; one that defines its own replaces it.
thread_run = sb._thread_run

-- ---------------------------------------------------------------------------
-- Report formatters a script can install as hooks, e.g.
-- `sysbench.hooks.report_intermediate = sysbench.report_csv`. `stat` is the
-- hook's table: counters are per period, latencies in seconds.

-- Per-second rates of a period (zero for an empty period, never inf/nan).
local function per_sec(stat)
  local dt = stat.time_interval
  local f = function(n) if dt > 0 then return n / dt end return 0 end
  return f(stat.events), f(stat.reads + stat.writes + stat.other), f(stat.reads),
         f(stat.writes), f(stat.other), f(stat.errors), f(stat.reconnects)
end

local function percentile_label()
  local p = (sb.opt and sb.opt.percentile) or 0
  if p == math.floor(p) then return string.format("%d", p) end
  return tostring(p)
end

-- The interval line of the text report. sysbench 1.0.20 prints "err/s"
-- without its colon here; we print it as in the built-in line.
function sb.report_default(stat)
  local tps, qps, r, w, o, e, rc = per_sec(stat)
  print(string.format("[ %.0fs ] thds: %d tps: %4.2f qps: %4.2f (r/w/o: %4.2f/%4.2f/%4.2f) " ..
                      "lat (ms,%s%%): %4.2f err/s: %4.2f reconn/s: %4.2f",
                      stat.time_total, stat.threads_running, tps, qps, r, w, o,
                      percentile_label(), stat.latency_pct * 1000, e, rc))
end

-- One CSV line per call, no header:
-- time,threads,tps,qps,reads/s,writes/s,other/s,latency_ms,errors/s,reconnects/s
function sb.report_csv(stat)
  local tps, qps, r, w, o, e, rc = per_sec(stat)
  print(string.format("%.0f,%d,%4.2f,%4.2f,%4.2f,%4.2f,%4.2f,%4.2f,%4.2f,%4.2f",
                      stat.time_total, stat.threads_running, tps, qps, r, w, o,
                      stat.latency_pct * 1000, e, rc))
end

-- A JSON array with one object per call; the engine closes it at the end
-- of the run (sb._close_reports).
local json_open = false
function sb.report_json(stat)
  local tps, qps, r, w, o, e, rc = per_sec(stat)
  io.write(json_open and ",\n" or "[\n")
  json_open = true
  io.write(string.format([[
  {
    "time": %4.0f,
    "threads": %d,
    "tps": %4.2f,
    "qps": {
      "total": %4.2f,
      "reads": %4.2f,
      "writes": %4.2f,
      "other": %4.2f
    },
    "latency": %4.2f,
    "errors": %4.2f,
    "reconnects": %4.2f
  }]], stat.time_total, stat.threads_running, tps, qps, r, w, o,
       stat.latency_pct * 1000, e, rc))
end

function sb._close_reports()
  if json_open then
    io.write("\n]\n")
    json_open = false
  end
end

-- ---------------------------------------------------------------------------
-- sysbench 0.5's API, which 1.0.x keeps for old scripts: globals for the
-- random functions, one implicit connection per state behind db_*, and
-- statement parameters bound to a Lua table that is re-read on every
-- execute. Options reach such scripts as global strings (legacy mode, set
-- by the Rust side after the script body ran).

thread_id = sb.tid
test = sb.cmdline.script_path
mysql_table_engine = "innodb"
myisam_max_rows = 1000000
DB_ERROR_NONE, DB_ERROR_RESTART_TRANSACTION, DB_ERROR_FAILED = 0, 1, 2

sb_rand = rand.default
sb_rand_uniform = rand.uniform
sb_rand_gaussian = rand.gaussian
sb_rand_special = rand.special
sb_rand_str = rand.string
function sb_rnd() return rand.uniform(0, 4294967295) end
sb_rand_uniq = rand._unique_in
rand._unique_in = nil

local db_con
function db_connect()
  if db_con == nil then
    local drv = sql.driver()
    db_driver = drv:name()
    db_con = drv:connect()
  end
  return db_con
end

function db_disconnect()
  if db_con ~= nil then
    db_con:disconnect()
    db_con = nil
  end
end

function db_query(q) return db_connect():query(q) end
function db_bulk_insert_init(prefix) db_connect():bulk_insert_init(prefix) end
function db_bulk_insert_next(values) db_connect():bulk_insert_next(values) end
function db_bulk_insert_done() db_connect():bulk_insert_done() end

-- A 0.5 statement: the 1.0 statement plus the bound table and its params.
function db_prepare(q)
  return { stmt = db_connect():prepare(q) }
end

-- Numbers bind as INT, strings as CHAR (never truncated), from the values
-- the table holds now; db_execute re-reads the table.
local NO_LIMIT = 2147483647
function db_bind_param(st, values)
  local params = {}
  for i = 1, #values do
    if type(values[i]) == "string" then
      params[i] = st.stmt:bind_create(sql.type.CHAR, NO_LIMIT)
    else
      params[i] = st.stmt:bind_create(sql.type.INT)
    end
  end
  st.stmt:bind_param(unpack(params, 1, #values))
  st.values, st.params = values, params
end

function db_bind_result() end

function db_execute(st)
  local values, params = st.values, st.params
  if params ~= nil then
    for i = 1, #params do params[i]:set(values[i]) end
  end
  return st.stmt:execute()
end

function db_store_results(rs) end
function db_free_results(rs) if rs ~= nil then rs:free() end end
function db_close(st) st.stmt:close() end
