#!/usr/bin/env bash
# How long `dbbench merge` takes for 64 shard results of a 1-hour run with
# 1-second intervals (issue 23's target: under 1 s).
#
#   bench/merge-speed.sh [DBBENCH] [SHARDS] [SECONDS]
#
# One real shard runs a Lua script with spread-out latencies for a few
# seconds (--report-interval=1); its result is the template. Each of the
# SHARDS results is that template with its own shard index and thread id,
# its interval series repeated to SECONDS ticks (so every tick's histogram
# is a real one, with a few hundred buckets). Then `dbbench merge` of all
# of them, three times, text layout to /dev/null; the median wall time and
# the peak memory are printed. Needs python3 (for the copies) and GNU time.
set -euo pipefail
BIN=${1:-target/release/dbbench}
SHARDS=${2:-64}
SECONDS_RUN=${3:-3600}
BIN=$(realpath "$BIN")
WORK=$(mktemp -d /tmp/dbbench-merge-speed.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
cat > spread.lua <<'LUA'
-- latencies from ~20 us to ~20 ms, a long tail: many histogram buckets per second
function event()
  local r = sysbench.rand.uniform(1, 1000)
  local spin = r <= 990 and r * 2e-6 or r * 2e-5
  local t = os.clock()
  while os.clock() - t < spin do end
end
LUA
"$BIN" spread.lua run --threads=1 --time=5 --report-interval=1 --rand-seed=1 \
    --shard=0/1 --shard-result=template.json >/dev/null
python3 - "$SHARDS" "$SECONDS_RUN" <<'PY'
import json, sys
shards, seconds = int(sys.argv[1]), int(sys.argv[2])
t = json.load(open("template.json"))
ticks = t["intervals"]
for i in range(shards):
    d = dict(t)
    d["shard_index"], d["shard_count"], d["first_thread"], d["threads"] = i, shards, i, 1
    d["run"] = dict(t["run"], threads=shards)
    d["intervals"] = [dict(ticks[k % len(ticks)], tick=k + 1, time_s=float(k + 1)) for k in range(seconds)]
    d["total_time_s"] = float(seconds)
    json.dump(d, open(f"shard-{i}.json", "w"))
PY
echo "inputs: $SHARDS results of $SECONDS_RUN 1-second intervals, $(du -sh --apparent-size . | cut -f1) in all; buckets per interval in the template: $(python3 -c 'import json,base64; t=json.load(open("template.json")); print(sorted(len(base64.b64decode(i["period"]["latency"]["buckets"]))//2 for i in t["intervals"])[len(t["intervals"])//2])') (median, approx.)"
times=()
for r in 1 2 3; do
    /usr/bin/time -f "%e %M %U %S" -o time.txt "$BIN" merge shard-*.json >/dev/null
    read -r secs kb user sys < time.txt
    # CPU time beside the wall: on a loaded host the wall includes waiting.
    echo "run $r: ${secs} s wall, ${user} s user + ${sys} s system CPU, peak RSS $((kb / 1024)) MiB"
    times+=("$secs")
done
median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 2p)
echo "median: ${median} s (target: under 1 s)"
