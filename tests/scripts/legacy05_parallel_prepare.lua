-- A sysbench 0.5-style parallel prepare (written for dbbench's tests): the
-- `run` command loads the tables, thread t creating t+1, t+1+num_threads,
-- ... once. Finds its common file next to it through the `test` global, as
-- 0.5 scripts did, or as a module from the current directory.

local dir = string.match(test, "(.*/)")
if dir then
  dofile(dir .. "legacy05_common.lua")
else
  require("legacy05_common")
end

function thread_init(thread_id)
  set_vars()
end

function event(thread_id)
  if not loaded then
    for n = thread_id + 1, oltp_tables_count, num_threads do
      create_insert(n)
    end
    loaded = true
  end
end
