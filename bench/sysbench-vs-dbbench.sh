#!/usr/bin/env bash
# Performance comparison of dbbench against sysbench 1.0.20 on MariaDB.
#
#   bench/sysbench-vs-dbbench.sh
#
# Both tools run the same Lua workloads with the same command line against
# the same server and the same tables, ALTERNATELY (round by round, order
# flipped every round so that slow drift of the machine or server does not
# favour one tool).  Each run is measured from outside:
#   - QPS from the tool's own final report line `queries: N (X per sec.)`
#   - client CPU per query = (user+sys) / queries  (GNU time)
#   - client peak RSS (GNU time %M)
#   - server CPU per query from mariadbd's /proc/PID/stat utime+stime delta
#   - rescheduling interrupts per query (RES/q): the whole machine's
#     rescheduling IPIs (/proc/interrupts "RES") during the run, per query.
#     On a VM a wake-up that crosses vCPUs is an IPI and costs tens of
#     microseconds (docs/performance.md, "The client's cost per query"); runs with more of
#     them are slower for both tools, so this column tells which runs met
#     the machine's slow state
# and the medians over the rounds are compared (ratios dbbench/sysbench),
# as is the median of each round's own ratio (pQPS, pCPU: the two runs of a
# round are back to back, so slow drift of the machine cancels out).
#
# Environment (defaults in brackets):
#   DBBENCH [target/release/dbbench]   SYSBENCH [sysbench]
#   DBBENCH_ARGS  extra options for dbbench's measured runs only (e.g.
#                 --client-threads=0 to compare the client models)
#   WORKLOADS [oltp_point_select oltp_read_only]  built-in names or script
#                 paths both tools run (e.g. bench/lua/string_work.lua, a
#                 Lua-heavy case)
#   THREADS [1 4 16 64 1024] (set empty to run only the MANY_CLIENTS case)
#   ROUNDS [3]  TIME [10] seconds per run   TABLES [4]  TABLE_SIZE [100000]
#   WARMUP [5] seconds of unmeasured warm-up after prepare (0: none)
#   PREPARE_WITH [sysbench]  which tool creates the tables (sysbench|dbbench)
#   SKIP_PREPARE [0]  1: reuse existing sbtest tables
#   MANY_CLIENTS [4096]  extra one-off run with this many clients measuring
#                        RSS per client (empty: skip)
#   MANY_TOOLS [dbbench sysbench]  tools for that run
#   RUN_SLACK [120]  seconds a run may exceed TIME before it is killed
#   MYSQL_SOCKET  use this existing server instead of starting one
#                 (MYSQL_USER [sbtest], MYSQL_DB [sbtest], MYSQL_PID: the
#                 server's pid if it cannot be found automatically)
#   PIN  a CPU number: the server's threads and both tools run on that one
#        CPU (taskset), so no wake-up crosses vCPUs and no IPI is sent: the
#        client's own cost without the VM's cross-vCPU wake-ups. The
#        server's affinity is restored at the end. [unset: the scheduler
#        places everything, as a user's run would]
#   CALLGRIND [1]  also count each tool's user-space instructions per event
#        and per query under valgrind's callgrind (1 client; the difference
#        between runs of CALLGRIND_EVENTS [2000 12000] events, so start-up
#        cancels out). Instruction counts do not depend on the machine's
#        state: the steadiest client-overhead figure here (seen within 2%
#        between runs; the per-connection read order and LuaJIT's trace
#        timing still vary). 0: skip.
#   RESULTS  also write the raw per-run numbers (TSV) to this file
#   KEEP [0]  1: keep the work dir (tool outputs, server logs)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$REPO"
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

DBBENCH=${DBBENCH:-target/release/dbbench}
SYSBENCH=${SYSBENCH:-sysbench}
read -r -a DBBENCH_EXTRA <<<"${DBBENCH_ARGS:-}"
WORKLOADS=${WORKLOADS:-oltp_point_select oltp_read_only}
THREADS=${THREADS-1 4 16 64 1024}   # empty: only the MANY_CLIENTS case
ROUNDS=${ROUNDS:-3}
TIME=${TIME:-10}
TABLES=${TABLES:-4}
TABLE_SIZE=${TABLE_SIZE:-100000}
WARMUP=${WARMUP:-5}
PREPARE_WITH=${PREPARE_WITH:-sysbench}
SKIP_PREPARE=${SKIP_PREPARE:-0}
MANY_CLIENTS=${MANY_CLIENTS-4096}
MANY_TOOLS=${MANY_TOOLS:-dbbench sysbench}
RUN_SLACK=${RUN_SLACK:-120}
MYSQL_SOCKET=${MYSQL_SOCKET:-}
MYSQL_USER=${MYSQL_USER:-sbtest}
MYSQL_DB=${MYSQL_DB:-sbtest}
MYSQL_PID=${MYSQL_PID:-}
RESULTS=${RESULTS:-}
PIN=${PIN:-}
CALLGRIND=${CALLGRIND:-1}
CALLGRIND_EVENTS=${CALLGRIND_EVENTS:-2000 12000}
KEEP=${KEEP:-0}

log() { echo "bench: $*" >&2; }
die() { echo "bench: error: $*" >&2; exit 1; }

# ------------------------------------------------------------ tools
resolve_bin() {   # absolute path of a command name or (relative) path
    local b=$1
    if [[ "$b" == */* ]]; then
        [ -x "$b" ] || return 1
        echo "$(cd "$(dirname "$b")" && pwd -P)/$(basename "$b")"
    else
        command -v "$b"
    fi
}
DBBENCH_BIN=$(resolve_bin "$DBBENCH") ||
    die "dbbench binary '$DBBENCH' not found (build it: cargo build --release, or set DBBENCH)"
SYSBENCH_BIN=$(resolve_bin "$SYSBENCH") ||
    die "sysbench '$SYSBENCH' not found (apt-get install -y sysbench)"
[ -x /usr/bin/time ] || die "/usr/bin/time not found (apt-get install -y time)"
for c in timeout mariadb getconf awk sort; do
    command -v "$c" >/dev/null || die "'$c' not found"
done
declare -A BIN=([sysbench]=$SYSBENCH_BIN [dbbench]=$DBBENCH_BIN)
CLK_TCK=$(getconf CLK_TCK)

# Thousands of client connections need as many file descriptors.
# shellcheck disable=SC2086  # THREADS is a space-separated list
max_threads=$(printf '%s\n' $THREADS "${MANY_CLIENTS:-0}" | sort -n | tail -n 1)
want_fds=$((max_threads * 2 + 256))
ulimit -n "$want_fds" 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
[ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -ge $((max_threads + 64)) ] ||
    log "warning: open files limit $(ulimit -n) is low for $max_threads clients"

# ------------------------------------------------------------ work dir, server
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dbbench-bench.XXXXXX")
chmod 755 "$WORK"   # servers.sh may need other users to traverse it
mkdir -p "$WORK/runs"
OWN_SERVER=0
SERVER_AFFINITY=""   # the server's CPU list before PIN, to restore
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [ -n "$SERVER_AFFINITY" ]; then
        taskset -a -p -c "$SERVER_AFFINITY" "$MYSQL_PID" >/dev/null 2>&1 ||
            log "warning: could not restore the server's CPU affinity ($SERVER_AFFINITY)"
    fi
    if [ "$OWN_SERVER" = 1 ]; then
        "$REPO/scripts/servers.sh" down "$WORK/srv" || log "warning: stopping MariaDB failed"
    fi
    if [ "$KEEP" = 1 ]; then
        log "work dir kept: $WORK"
    else
        rm -rf "$WORK"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ -z "$MYSQL_SOCKET" ]; then
    OWN_SERVER=1
    "$REPO/scripts/servers.sh" up "$WORK/srv" --only mariadb
    # shellcheck disable=SC1091
    . "$WORK/srv/env"
    MYSQL_SOCKET=$DBBENCH_TEST_MYSQL_SOCKET
    MYSQL_PID=$(cat "$WORK/srv/mariadb.pid")
fi
[ -S "$MYSQL_SOCKET" ] || die "no MariaDB socket at $MYSQL_SOCKET"

sql() { mariadb --no-defaults --socket="$MYSQL_SOCKET" -u "$MYSQL_USER" --batch --skip-column-names "$MYSQL_DB" -e "$1"; }
sql 'SELECT 1' >/dev/null || die "cannot connect to MariaDB at $MYSQL_SOCKET as $MYSQL_USER"

# Server pid for the server-CPU measurement.
if [ -z "$MYSQL_PID" ]; then
    pf=$(sql 'SELECT @@pid_file' 2>/dev/null || true)
    dd=$(sql 'SELECT @@datadir' 2>/dev/null || true)
    [[ "$pf" == /* ]] || pf=$dd/$pf
    [ -r "$pf" ] && MYSQL_PID=$(cat "$pf")
fi
if [ -z "$MYSQL_PID" ] || [ ! -r "/proc/$MYSQL_PID/stat" ]; then
    log "warning: MariaDB server pid unknown (set MYSQL_PID): server CPU will be n/a"
    MYSQL_PID=""
fi
server_ticks() {   # utime+stime of the server in clock ticks
    if [ -z "$MYSQL_PID" ]; then echo ""; return; fi
    # Drop "pid (comm) " first: comm may contain spaces; then utime/stime
    # are fields 12/13 (14/15 of the full line).
    sed 's/^.*) //' "/proc/$MYSQL_PID/stat" 2>/dev/null | awk '{print $12 + $13}'
}

# PIN: the server's threads (and, through the acceptor thread, those it
# creates for new connections) and both tools on one CPU.
PIN_CMD=()
if [ -n "$PIN" ]; then
    [[ "$PIN" =~ ^[0-9]+$ ]] && [ "$PIN" -lt "$(nproc)" ] ||
        die "PIN must be one CPU number below $(nproc), not '$PIN'"
    command -v taskset >/dev/null || die "PIN needs taskset (apt-get install -y util-linux)"
    [ -n "$MYSQL_PID" ] || die "PIN needs the server's pid (set MYSQL_PID)"
    SERVER_AFFINITY=$(taskset -p -c "$MYSQL_PID" | awk -F': ' '{ print $2 }')
    taskset -a -p -c "$PIN" "$MYSQL_PID" >/dev/null || die "cannot pin the server (pid $MYSQL_PID) to CPU $PIN"
    PIN_CMD=(taskset -c "$PIN")
fi

# Rescheduling IPIs sent so far, all CPUs (empty where the kernel has no
# RES line, e.g. not x86).
resched_irqs() {
    awk '$1 == "RES:" { s = 0; for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) s += $i; print s }' /proc/interrupts 2>/dev/null
}

# Thousands of clients: make sure the server admits them (our own servers
# already allow 5000 connections and 1M prepared statements).
need_conn=$((max_threads + 50))
cur=$(sql 'SELECT @@max_connections')
if [ "$cur" -lt "$need_conn" ]; then
    sql "SET GLOBAL max_connections = $need_conn" ||
        log "warning: max_connections is $cur, below $need_conn, and could not be raised"
fi
cur=$(sql 'SELECT @@max_prepared_stmt_count')
if [ "$cur" -lt 1000000 ]; then
    sql "SET GLOBAL max_prepared_stmt_count = 1000000" ||
        log "warning: max_prepared_stmt_count is $cur and could not be raised"
fi

# Identical options for both tools: same tables, same distribution.
COMMON=(--db-driver=mysql "--mysql-socket=$MYSQL_SOCKET" "--mysql-user=$MYSQL_USER"
        "--mysql-db=$MYSQL_DB" "--tables=$TABLES" "--table-size=$TABLE_SIZE"
        --rand-type=uniform)

# ------------------------------------------------------------ header
# What a wake-up costs here, on one CPU and across CPUs (bench/wakeup_cost.rs):
# on a VM the second can dwarf a query's client work.
wakeup_cost() {
    local bin=$REPO/target/release/examples/wakeup-cost
    if [ ! -x "$bin" ] && command -v cargo >/dev/null; then
        cargo build --release --quiet --example wakeup-cost >/dev/null 2>&1 || true
    fi
    if [ -x "$bin" ]; then
        "$bin" 2>&1 | sed 's/^/# /'
    else
        echo "# wake-up cost: n/a (cargo build --release --example wakeup-cost)"
    fi
}
{
    echo "# sysbench vs dbbench — $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "# machine: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), $(uname -sr)"
    wakeup_cost
    echo "# server: $(sql 'SELECT VERSION()'), socket $MYSQL_SOCKET, pid ${MYSQL_PID:-n/a}"
    echo "# sysbench: $SYSBENCH_BIN ($("$SYSBENCH_BIN" --version 2>&1 | head -n 1))"
    echo "# dbbench:  $DBBENCH_BIN ($("$DBBENCH_BIN" --version 2>&1 | head -n 1)) ${DBBENCH_ARGS:-}"
    echo "# workloads: $WORKLOADS; threads: $THREADS; rounds: $ROUNDS x ${TIME}s; tables: $TABLES x $TABLE_SIZE rows; --rand-type=uniform"
    if [ -n "$PIN" ]; then
        echo "# PIN=$PIN: server and both tools on CPU $PIN only (no cross-vCPU wake-ups); QPS is that of one CPU"
    else
        echo "# placement: the scheduler's (PIN unset)"
    fi
}

# ------------------------------------------------------------ prepare
if [ "$SKIP_PREPARE" != 1 ]; then
    [ -n "${BIN[$PREPARE_WITH]:-}" ] || die "PREPARE_WITH must be sysbench or dbbench"
    log "preparing $TABLES tables x $TABLE_SIZE rows with $PREPARE_WITH"
    # cleanup first: tables of another size from an earlier run would skew
    # the comparison.  One thread per table.
    for step in cleanup prepare; do
        if ! timeout -k 10 1800 "${BIN[$PREPARE_WITH]}" oltp_read_only "${COMMON[@]}" \
                "--threads=$TABLES" "$step" >"$WORK/$step.out" 2>&1; then
            tail -n 20 "$WORK/$step.out" >&2
            die "$PREPARE_WITH $step failed (output above)"
        fi
    done
fi
if [ "$WARMUP" -gt 0 ]; then
    # Load the tables into the buffer pool before anything is measured.
    log "warming up for ${WARMUP}s"
    timeout -k 10 $((WARMUP + RUN_SLACK)) "$SYSBENCH_BIN" oltp_read_only "${COMMON[@]}" \
        --threads=4 "--time=$WARMUP" run >"$WORK/warmup.out" 2>&1 ||
        log "warning: warm-up failed: $(tail -n 1 "$WORK/warmup.out")"
fi

# ------------------------------------------------------------ measuring
TSV=$WORK/results.tsv
printf 'workload\tthreads\tround\ttool\tqps\tqueries\tcli_us_q\tuser_us_q\tsys_us_q\trss_mib\tsrv_us_q\telapsed_s\tres_q\n' >"$TSV"

# run_one TOOL WORKLOAD THREADS ROUND: one measured run; appends to $TSV.
run_one() {
    local tool=$1 wl=$2 th=$3 round=$4
    local tag=${wl##*/}   # a script path names its runs by file name
    local base="$WORK/runs/${tag%.lua}-$th-$round-$tool" rc=0 t0 t1 i0 i1
    local extra=()
    [ "$tool" = dbbench ] && extra=("${DBBENCH_EXTRA[@]}")
    t0=$(server_ticks)
    i0=$(resched_irqs)
    /usr/bin/time -f '%U %S %e %M' -o "$base.time" \
        timeout -k 10 $((TIME + RUN_SLACK)) "${PIN_CMD[@]}" "${BIN[$tool]}" "$wl" "${COMMON[@]}" "${extra[@]}" \
        "--threads=$th" "--time=$TIME" --report-interval=0 run \
        </dev/null >"$base.out" 2>"$base.err" || rc=$?
    i1=$(resched_irqs)
    t1=$(server_ticks)

    local line queries qps
    line=$(awk '$1 == "queries:" { q = $2; x = $3; gsub(/[()]/, "", x); print q, x }' "$base.out" | tail -n 1)
    read -r queries qps <<<"${line:-0 0}"
    if [ "$rc" != 0 ] || [ "${queries:-0}" = 0 ]; then
        log "FAILED: $tool $wl threads=$th round $round (exit $rc$([ "$rc" = 124 ] && echo ': timed out'))"
        { tail -n 8 "$base.err"; tail -n 4 "$base.out"; } | sed 's/^/    | /' >&2
        return 0
    fi
    # GNU time prefixes a status line on non-zero exit; the numbers are last.
    local u s e m
    read -r u s e m <<<"$(tail -n 1 "$base.time")"
    awk -v wl="$wl" -v th="$th" -v r="$round" -v tool="$tool" -v qps="$qps" \
        -v q="$queries" -v u="$u" -v s="$s" -v e="$e" -v m="$m" \
        -v t0="$t0" -v t1="$t1" -v hz="$CLK_TCK" -v i0="$i0" -v i1="$i1" 'BEGIN {
            srv = (t0 == "" || t1 == "") ? "NA" : sprintf("%.2f", (t1 - t0) / hz / q * 1e6)
            res = (i0 == "" || i1 == "") ? "NA" : sprintf("%.4f", (i1 - i0) / q)
            printf "%s\t%s\t%s\t%s\t%.2f\t%d\t%.3f\t%.3f\t%.3f\t%.1f\t%s\t%.2f\t%s\n",
                wl, th, r, tool, qps, q, (u + s) / q * 1e6, u / q * 1e6, s / q * 1e6,
                m / 1024, srv, e, res
        }' >>"$TSV"
}

# median TOOL WORKLOAD THREADS COLUMN: median of a TSV column over rounds.
median() {
    awk -F'\t' -v tool="$1" -v wl="$2" -v th="$3" -v c="$4" \
        '$4 == tool && $1 == wl && $2 == th && $c != "NA" { print $c }' "$TSV" |
        sort -g |
        awk '{ a[NR] = $1 } END {
            if (NR == 0) { print "NA"; exit }
            printf "%.2f\n", (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
# paired WORKLOAD THREADS COLUMN: median over rounds of dbbench/sysbench
# for one TSV column, both runs taken from the same round.
paired() {
    awk -F'\t' -v wl="$1" -v th="$2" -v c="$3" '$1 == wl && $2 == th && $c != "NA" { v[$3, $4] = $c; r[$3] = 1 }
        END { for (k in r) if (((k, "dbbench") in v) && ((k, "sysbench") in v) && v[k, "sysbench"] > 0)
                  print v[k, "dbbench"] / v[k, "sysbench"] }' "$TSV" |
        sort -g |
        awk '{ a[NR] = $1 } END {
            if (NR == 0) { print "n/a"; exit }
            printf "%.2f\n", (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "NA" || b == "NA" || b == 0) print "n/a"; else printf "%.2f", a / b }'; }

SUMMARY=$WORK/summary.txt
: >"$SUMMARY"

report_config() {
    local wl=$1 th=$2 t
    local -A Q C U S R V I
    for t in sysbench dbbench; do
        I[$t]=$(median "$t" "$wl" "$th" 13)
        Q[$t]=$(median "$t" "$wl" "$th" 5)
        C[$t]=$(median "$t" "$wl" "$th" 7)
        U[$t]=$(median "$t" "$wl" "$th" 8)
        S[$t]=$(median "$t" "$wl" "$th" 9)
        R[$t]=$(median "$t" "$wl" "$th" 10)
        V[$t]=$(median "$t" "$wl" "$th" 11)
    done
    echo
    echo "=== $wl, threads=$th: median of $ROUNDS rounds x ${TIME}s"
    printf '%-9s %12s %14s %17s %9s %12s\n' tool QPS 'client us/q' '(user / sys)' 'RSS MiB' 'server us/q'
    for t in sysbench dbbench; do
        printf '%-9s %12s %14s %17s %9s %12s\n' "$t" "${Q[$t]}" "${C[$t]}" "(${U[$t]} / ${S[$t]})" "${R[$t]}" "${V[$t]}"
    done
    local rq rc rr rv
    rq=$(ratio "${Q[dbbench]}" "${Q[sysbench]}")
    rc=$(ratio "${C[dbbench]}" "${C[sysbench]}")
    rr=$(ratio "${R[dbbench]}" "${R[sysbench]}")
    rv=$(ratio "${V[dbbench]}" "${V[sysbench]}")
    echo "ratios dbbench/sysbench: QPS $rq, client CPU/query $rc, RSS $rr, server CPU/query $rv"
    # The two tools of one round run back to back, so their ratio is little
    # touched by the machine's slow drifts (this VM switches for minutes
    # between a fast and a ~1.4x slower state that hits both tools alike);
    # the median of these per-round ratios is the steadier comparison.
    echo "median of per-round ratios (each round's dbbench run / its sysbench run): QPS $(paired "$wl" "$th" 5), client CPU/query $(paired "$wl" "$th" 7)"
    echo "rescheduling IPIs per query (whole machine; high = the VM's slow state): sysbench ${I[sysbench]}, dbbench ${I[dbbench]}"
    echo "raw rounds (tool round: qps, client us/q, RSS MiB, server us/q, elapsed s, RES/q):"
    awk -F'\t' -v wl="$wl" -v th="$th" '$1 == wl && $2 == th {
        printf "  %-9s %s: %10s qps %9s us/q %8s MiB %9s us/q %7s s %8s RES/q\n", $4, $3, $5, $7, $10, $11, $12, $13 }' "$TSV"
    printf '%-18s %7s | %11s %11s %6s | %8s %8s %6s | %8s %8s %6s | %8s %8s %6s | %6s %6s | %6s %6s\n' \
        "$wl" "$th" "${Q[sysbench]}" "${Q[dbbench]}" "$rq" "${C[sysbench]}" "${C[dbbench]}" "$rc" \
        "${R[sysbench]}" "${R[dbbench]}" "$rr" "${V[sysbench]}" "${V[dbbench]}" "$rv" \
        "$(paired "$wl" "$th" 5)" "$(paired "$wl" "$th" 7)" "${I[sysbench]}" "${I[dbbench]}" >>"$SUMMARY"
}

for wl in $WORKLOADS; do
    for th in $THREADS; do
        log "$wl threads=$th"
        for ((round = 1; round <= ROUNDS; round++)); do
            # Alternate which tool goes first (ABBA...) against drift.
            if ((round % 2)); then order=(sysbench dbbench); else order=(dbbench sysbench); fi
            for t in "${order[@]}"; do run_one "$t" "$wl" "$th" "$round"; done
        done
        report_config "$wl" "$th"
    done
done

echo
echo "=== summary (medians; ratio = dbbench/sysbench; CPU and server in us/query;"
echo "    pQPS, pCPU = median of the per-round ratios of QPS and client CPU/query;"
echo "    sb/db RES = median rescheduling IPIs per query, whole machine)"
printf '%-18s %7s | %11s %11s %6s | %8s %8s %6s | %8s %8s %6s | %8s %8s %6s | %6s %6s | %6s %6s\n' \
    workload threads 'sb QPS' 'db QPS' ratio 'sb CPU' 'db CPU' ratio 'sb RSS' 'db RSS' ratio 'sb srv' 'db srv' ratio pQPS pCPU 'sb RES' 'db RES'
cat "$SUMMARY"

# ------------------------------------------------------------ many clients
if [ -n "$MANY_CLIENTS" ]; then
    echo
    echo "=== $MANY_CLIENTS clients, oltp_point_select, 1 run x ${TIME}s: memory per client"
    for t in $MANY_TOOLS; do
        [ -n "${BIN[$t]:-}" ] || { log "MANY_TOOLS: unknown tool $t"; continue; }
        log "$t with $MANY_CLIENTS clients"
        run_one "$t" oltp_point_select "$MANY_CLIENTS" many
    done
    awk -F'\t' -v n="$MANY_CLIENTS" '$3 == "many" {
        printf "  %-9s %10s qps  RSS %8s MiB = %7.1f KiB/client  client %s us/q  server %s us/q\n",
            $4, $5, $10, $10 * 1024 / n, $7, $11 }' "$TSV"
fi

# ------------------------------------------------------------ instructions
# instructions TOOL WORKLOAD EVENTS: "instructions queries" of one callgrind
# run of one client for EVENTS events (empty on failure).
instructions() {
    local tool=$1 wl=$2 ev=$3 tag=${2##*/}
    local base="$WORK/runs/callgrind-${tag%.lua}-$ev-$tool" ir q
    if ! timeout -k 10 1800 valgrind --tool=callgrind --smc-check=all --callgrind-out-file="$base.cg" \
            "${BIN[$tool]}" "$wl" "${COMMON[@]}" --threads=1 "--events=$ev" --time=0 --report-interval=0 run \
            </dev/null >"$base.out" 2>"$base.err"; then
        log "FAILED: callgrind $tool $wl --events=$ev"
        tail -n 4 "$base.err" | sed 's/^/    | /' >&2
        return 0
    fi
    ir=$(awk '$1 == "summary:" { print $2 }' "$base.cg")
    q=$(awk '$1 == "queries:" { print $2 }' "$base.out" | tail -n 1)
    [ -n "$ir" ] && [ -n "$q" ] && echo "$ir $q"
}
if [ "$CALLGRIND" = 1 ] && ! command -v valgrind >/dev/null; then
    log "warning: valgrind not found (apt-get install -y valgrind): instruction counts skipped"
    CALLGRIND=0
fi
if [ "$CALLGRIND" = 1 ]; then
    read -r ev_lo ev_hi <<<"$CALLGRIND_EVENTS"
    [[ "$ev_lo" =~ ^[0-9]+$ && "$ev_hi" =~ ^[0-9]+$ ]] && [ "$ev_hi" -gt "$ev_lo" ] ||
        die "CALLGRIND_EVENTS must be two event counts, the second larger, not '$CALLGRIND_EVENTS'"
    echo
    echo "=== user-space instructions (callgrind, 1 client, the runs of $ev_hi and $ev_lo events subtracted)"
    printf '%-18s %-9s %12s %12s\n' workload tool 'instr/event' 'instr/query'
    for wl in $WORKLOADS; do
        declare -A PER_Q=()
        for t in sysbench dbbench; do
            log "callgrind: $t $wl"
            lo=$(instructions "$t" "$wl" "$ev_lo") hi=$(instructions "$t" "$wl" "$ev_hi")
            if [ -z "$lo" ] || [ -z "$hi" ]; then
                printf '%-18s %-9s %12s %12s\n' "$wl" "$t" n/a n/a
                continue
            fi
            read -r ir_lo q_lo <<<"$lo"
            read -r ir_hi q_hi <<<"$hi"
            PER_Q[$t]=$(awk -v a="$ir_lo" -v b="$ir_hi" -v p="$q_lo" -v q="$q_hi" 'BEGIN { printf "%.0f", (b - a) / (q - p) }')
            printf '%-18s %-9s %12s %12s\n' "$wl" "$t" \
                "$(awk -v a="$ir_lo" -v b="$ir_hi" -v n=$((ev_hi - ev_lo)) 'BEGIN { printf "%.0f", (b - a) / n }')" "${PER_Q[$t]}"
        done
        echo "  ratio dbbench/sysbench: $(ratio "${PER_Q[dbbench]:-NA}" "${PER_Q[sysbench]:-NA}")"
    done
fi

echo
echo "=== raw per-run results (TSV)"
cat "$TSV"
if [ -n "$RESULTS" ]; then cp "$TSV" "$RESULTS"; log "raw results written to $RESULTS"; fi
