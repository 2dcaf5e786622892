#!/usr/bin/env bash
# Whether hostile clients of the live-metrics endpoint delay well-behaved
# scrapes or the run (issue 38): a run on the embedded default (SQLite,
# oltp_point_select, 1 client, --metrics-listen) scraped every 200 ms, once
# with nobody else connected and once beside HOSTILE connections, half of
# them trickling `GET /metr` a byte every 250 ms, half silent. Printed per
# case: scrape latency (median, max, timeouts at 3 s) and the run's tps,
# alternating the cases REPEATS times (the host is noisy: compare medians).
#
#   bench/metrics-stall.sh [DBBENCH] [HOSTILE] [REPEATS]
#
# Needs python3.
set -euo pipefail
BIN=$(realpath "${1:-target/release/dbbench}")
HOSTILE=${2:-100}
REPEATS=${3:-3}
WORK=$(mktemp -d /tmp/dbbench-metrics-stall.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
"$BIN" oltp_point_select prepare --table-size=10000 >/dev/null

one() { # $1 = hostile connections
    local port
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    "$BIN" oltp_point_select run --table-size=10000 --threads=1 --time=8 \
        --metrics-listen="127.0.0.1:$port" >run.txt 2>run.err &
    local pid=$!
    python3 - "$port" "$1" <<'PY'
import socket, sys, time, statistics
port, hostile = int(sys.argv[1]), int(sys.argv[2])
addr = ("127.0.0.1", port)
deadline = time.time() + 20
while True:
    try:
        socket.create_connection(addr, timeout=1).close(); break
    except OSError:
        if time.time() > deadline: sys.exit("endpoint never listened")
        time.sleep(0.02)
conns = [socket.create_connection(addr) for _ in range(hostile)]
for c in conns[::2]:
    c.sendall(b"GET /metr")
lat, timeouts, stop, next_trickle = [], 0, time.time() + 6, 0.0
while time.time() < stop:
    if time.time() >= next_trickle:
        for c in conns[::2]:
            try: c.sendall(b"i")
            except OSError: pass
        next_trickle = time.time() + 0.25
    t0 = time.time()
    try:
        s = socket.create_connection(addr, timeout=3)
        s.settimeout(3)
        s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
        while s.recv(65536): pass
        s.close()
        lat.append(time.time() - t0)
    except OSError:
        timeouts += 1
    time.sleep(0.2)
ms = sorted(x * 1e3 for x in lat)
med = statistics.median(ms) if ms else float("nan")
mx = ms[-1] if ms else float("nan")
print(f"scrapes {len(ms)}, median {med:.2f} ms, max {mx:.2f} ms, timed out {timeouts}", end="")
PY
    wait "$pid"
    echo ", run: $(awk '/transactions:/ { gsub(/[()]/, "", $3); print $3 " tps" }' run.txt)"
}

for r in $(seq "$REPEATS"); do
    echo -n "repeat $r, nobody else connected:   "; one 0
    echo -n "repeat $r, $HOSTILE hostile connections: "; one "$HOSTILE"
done
