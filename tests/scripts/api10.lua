-- Exercises the sysbench 1.0 Lua API (written for dbbench's tests). Every
-- line it prints starts with "api:" and must be the same under sysbench
-- 1.0.20 and dbbench; the statement counts must match too.
local ffi = require("ffi")
ffi.cdef[[ void sb_counter_inc(int, sb_counter_type); ]]

sysbench.cmdline.options = {
  rows = {"rows in the test table", 10},
  label = {"a string option", "x"},
  flag = {"a boolean option", false},
  reconnect_check = {"call con:reconnect() in thread_init", false},
}

local function say(...)
  local parts = {}
  for i = 1, select("#", ...) do parts[#parts + 1] = tostring((select(i, ...))) end
  print("api: " .. table.concat(parts, " "))
end

sysbench.cmdline.commands = {
  fill = {function()
    local con = sysbench.sql.driver():connect()
    con:query("DROP TABLE IF EXISTS api10")
    con:query("CREATE TABLE api10 (id INTEGER NOT NULL PRIMARY KEY, v VARCHAR(20))")
    con:bulk_insert_init("INSERT INTO api10 (id, v) VALUES")
    for i = 1, sysbench.opt.rows do
      con:bulk_insert_next(string.format("(%d, %s)", i, i % 3 == 0 and "NULL" or "'v" .. i .. "'"))
    end
    con:bulk_insert_done()
    say("fill", sysbench.opt.rows, sysbench.opt.label, tostring(sysbench.opt.flag))
  end},
  drop = {function()
    sysbench.sql.driver():connect():query("DROP TABLE IF EXISTS api10")
  end},
}

function init()
  say("version", type(sysbench.version), sysbench.cmdline.command)
  say("types", sysbench.sql.type.INT, sysbench.sql.type.VARCHAR, sysbench.sql.error.IGNORABLE)
  say("opt", sysbench.opt.rows, sysbench.opt.label, tostring(sysbench.opt.flag))
  local s = sysbench.rand.string("#@-##")
  say("rand.string", #s, s:match("^%d%l%-%d%d$") ~= nil)
  local u = sysbench.rand.uniform(5, 7)
  say("rand.uniform", u >= 5 and u <= 7)
  say("ffi.rand", ffi.C.sb_rand_uniform(3, 3))
end

local con, stmt, p_id, p_v, upd

function thread_init()
  local drv = sysbench.sql.driver()
  con = drv:connect()
  stmt = con:prepare("SELECT id, v FROM api10 WHERE id = ?")
  p_id = stmt:bind_create(sysbench.sql.type.INT)
  stmt:bind_param(p_id)
  upd = con:prepare("UPDATE api10 SET v = ? WHERE id = ?")
  p_v = upd:bind_create(sysbench.sql.type.VARCHAR, 4)
  local p_uid = upd:bind_create(sysbench.sql.type.INT)
  upd:bind_param(p_v, p_uid)
  p_uid:set(1)
  if sysbench.tid == 0 then
    say("driver", drv:name() == sysbench.opt.db_driver)
    say("query_row", con:query_row("SELECT 40 + 2"))
    local a, b = con:query_row("SELECT id, v FROM api10 WHERE id = 3")
    say("query_row null", a, b)
    local rs = con:query("SELECT id, v FROM api10 ORDER BY id")
    say("rs", rs.nrows, rs.nfields)
    local row = rs:fetch_row()
    say("row1", row[1], row[2])
    say("dml", con:query("UPDATE api10 SET v = v WHERE id = 0") == nil)
    p_id:set(2)
    say("stmt", stmt:execute().nrows)
    p_v:set("truncated")
    upd:execute()
    say("char max_len", con:query_row("SELECT v FROM api10 WHERE id = 1"))
    p_v:set_rand_str("##")
    upd:execute()
    local v = con:query_row("SELECT v FROM api10 WHERE id = 1")
    say("set_rand_str", #v, v:match("^%d%d$") ~= nil)
    local ok, err = pcall(con.query, con, "SELECT * FROM no_such_table_api10")
    say("error", ok, type(err))
    -- sysbench 1.0.20 crashes in con:reconnect() on MySQL and does not
    -- support it on PostgreSQL: only dbbench is asked to (--reconnect_check).
    if sysbench.opt.reconnect_check then
      con:reconnect()
      say("reconnected", con:query_row("SELECT 7"))
    end
  end
end

function event()
  p_id:set(sysbench.rand.uniform(1, sysbench.opt.rows))
  stmt:execute()
  ffi.C.sb_counter_inc(sysbench.tid, ffi.C.SB_CNT_ERROR)
end

-- The default loop, written out with the C functions scripts may call.
function thread_run(tid)
  while ffi.C.sb_more_events(tid) do
    ffi.C.sb_event_start(tid)
    event(tid)
    ffi.C.sb_event_stop(tid)
  end
end

function thread_done()
  con:disconnect()
end

sysbench.hooks.report_cumulative = function(stat)
  say("cumulative", stat.events, stat.reads, stat.writes, stat.other, stat.errors, stat.reconnects,
      stat.latency_min <= stat.latency_avg and stat.latency_avg <= stat.latency_max)
end

function done()
  say("done")
end
