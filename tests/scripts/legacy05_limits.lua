-- Prints the run's limits as a sysbench 0.5 script reads them: the globals
-- num_threads, max_requests, max_time and tx_rate (written for dbbench's
-- tests).

function thread_init(thread_id)
  if thread_id == 0 then
    print(string.format("globals: num_threads=%s max_requests=%s max_time=%s tx_rate=%s",
                        tostring(num_threads), tostring(max_requests), tostring(max_time), tostring(tx_rate)))
    local o = sysbench.opt
    print(string.format("opt: threads=%s events=%s time=%s rate=%s num_threads=%s max_requests=%s max_time=%s tx_rate=%s",
                        tostring(o.threads), tostring(o.events), tostring(o.time), tostring(o.rate),
                        tostring(o.num_threads), tostring(o.max_requests), tostring(o.max_time), tostring(o.tx_rate)))
  end
end

function event(thread_id)
end
