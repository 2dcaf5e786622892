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
    error("SQL API error", 3)
  end
  error(string.format("SQL error, errno = %d, state = '%s': %s",
                      err.sql_errno or 0, err.sql_state or "", err.sql_errmsg or ""), 3)
end

function sql.driver(name)
  local h = raw.driver(name)
  return setmetatable({ _h = h }, Driver)
end

function Driver:name() return self._h:name() end

function Driver:connect()
  local h = self._h:connect()
  return setmetatable({ _h = h, sql_errno = 0, sql_state = "", sql_errmsg = "" }, Connection)
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
  return setmetatable({ _h = h, _con = self }, Statement)
end

function Connection:disconnect() self._h:disconnect() end
function Connection:reconnect()
  local ok, err = self._h:reconnect()
  if err ~= nil then return raise(self, err) end
end
function Connection:check_error(rs, q) return rs end

-- Bulk insert: `{prefix} {t1},{t2},...` flushed before the statement would
-- exceed 512 KiB, and at done; each flush is one statement.
local BULK_LIMIT = 524288
function Connection:bulk_insert_init(prefix)
  self._bulk_prefix, self._bulk, self._bulk_len = prefix, {}, #prefix + 1
end
local bulk_rows = sb._bulk_rows
sb._bulk_rows = nil
local function bulk_flush(self)
  if self._bulk ~= nil and #self._bulk > 0 then
    local n = #self._bulk
    local q = self._bulk_prefix .. " " .. table.concat(self._bulk, ",")
    self._bulk, self._bulk_len = {}, #self._bulk_prefix + 1
    self:query(q)
    bulk_rows(n)
  end
end
function Connection:bulk_insert_next(values)
  if self._bulk == nil then error("bulk_insert_next() called before bulk_insert_init()", 2) end
  if self._bulk_len + #values + 1 > BULK_LIMIT then bulk_flush(self) end
  local b = self._bulk
  b[#b + 1] = values
  self._bulk_len = self._bulk_len + #values + 1
end
function Connection:bulk_insert_done()
  bulk_flush(self)
  self._bulk, self._bulk_prefix = nil, nil
end

function Statement:bind_create(t, max_len)
  return self._h:bind_create(t, max_len)
end
function Statement:bind_param(...) self._h:bind_param(...) end
function Statement:execute()
  local rs, err = self._h:execute()
  if err ~= nil then return raise(self._con, err) end
  return rs
end
function Statement:close() self._h:close() end

-- ---------------------------------------------------------------------------
-- The event protocol, called by the Rust client loop once per event.
-- Returns event()'s value (truthy = this client stops). A RESTART_EVENT
-- error calls before_restart_event and re-runs the event; anything else
-- propagates and fails the run.
local RESTART = sb.error.RESTART_EVENT
function sb._event_once(tid)
  while true do
    local ok, ret = pcall(event, tid)
    if ok then return ret end
    if type(ret) == "table" and ret.errcode == RESTART then
      local hook = sb.hooks.before_restart_event
      if hook ~= nil then hook(ret) end
    else
      error(ret, 0)
    end
  end
end
