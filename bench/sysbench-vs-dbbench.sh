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
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
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
{
    echo "# sysbench vs dbbench — $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "# machine: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), $(uname -sr)"
    echo "# server: $(sql 'SELECT VERSION()'), socket $MYSQL_SOCKET, pid ${MYSQL_PID:-n/a}"
    echo "# sysbench: $SYSBENCH_BIN ($("$SYSBENCH_BIN" --version 2>&1 | head -n 1))"
    echo "# dbbench:  $DBBENCH_BIN ($("$DBBENCH_BIN" --version 2>&1 | head -n 1)) ${DBBENCH_ARGS:-}"
    echo "# workloads: $WORKLOADS; threads: $THREADS; rounds: $ROUNDS x ${TIME}s; tables: $TABLES x $TABLE_SIZE rows; --rand-type=uniform"
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
printf 'workload\tthreads\tround\ttool\tqps\tqueries\tcli_us_q\tuser_us_q\tsys_us_q\trss_mib\tsrv_us_q\telapsed_s\n' >"$TSV"

# run_one TOOL WORKLOAD THREADS ROUND: one measured run; appends to $TSV.
run_one() {
    local tool=$1 wl=$2 th=$3 round=$4
    local tag=${wl##*/}   # a script path names its runs by file name
    local base="$WORK/runs/${tag%.lua}-$th-$round-$tool" rc=0 t0 t1
    local extra=()
    [ "$tool" = dbbench ] && extra=("${DBBENCH_EXTRA[@]}")
    t0=$(server_ticks)
    /usr/bin/time -f '%U %S %e %M' -o "$base.time" \
        timeout -k 10 $((TIME + RUN_SLACK)) "${BIN[$tool]}" "$wl" "${COMMON[@]}" "${extra[@]}" \
        "--threads=$th" "--time=$TIME" --report-interval=0 run \
        </dev/null >"$base.out" 2>"$base.err" || rc=$?
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
        -v t0="$t0" -v t1="$t1" -v hz="$CLK_TCK" 'BEGIN {
            srv = (t0 == "" || t1 == "") ? "NA" : sprintf("%.2f", (t1 - t0) / hz / q * 1e6)
            printf "%s\t%s\t%s\t%s\t%.2f\t%d\t%.3f\t%.3f\t%.3f\t%.1f\t%s\t%.2f\n",
                wl, th, r, tool, qps, q, (u + s) / q * 1e6, u / q * 1e6, s / q * 1e6,
                m / 1024, srv, e
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
    local -A Q C U S R V
    for t in sysbench dbbench; do
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
    echo "raw rounds (tool round: qps, client us/q, RSS MiB, server us/q, elapsed s):"
    awk -F'\t' -v wl="$wl" -v th="$th" '$1 == wl && $2 == th {
        printf "  %-9s %s: %10s qps %9s us/q %8s MiB %9s us/q %7s s\n", $4, $3, $5, $7, $10, $11, $12 }' "$TSV"
    printf '%-18s %7s | %11s %11s %6s | %8s %8s %6s | %8s %8s %6s | %8s %8s %6s | %6s %6s\n' \
        "$wl" "$th" "${Q[sysbench]}" "${Q[dbbench]}" "$rq" "${C[sysbench]}" "${C[dbbench]}" "$rc" \
        "${R[sysbench]}" "${R[dbbench]}" "$rr" "${V[sysbench]}" "${V[dbbench]}" "$rv" \
        "$(paired "$wl" "$th" 5)" "$(paired "$wl" "$th" 7)" >>"$SUMMARY"
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
echo "    pQPS, pCPU = median of the per-round ratios of QPS and client CPU/query)"
printf '%-18s %7s | %11s %11s %6s | %8s %8s %6s | %8s %8s %6s | %8s %8s %6s | %6s %6s\n' \
    workload threads 'sb QPS' 'db QPS' ratio 'sb CPU' 'db CPU' ratio 'sb RSS' 'db RSS' ratio 'sb srv' 'db srv' ratio pQPS pCPU
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

echo
echo "=== raw per-run results (TSV)"
cat "$TSV"
if [ -n "$RESULTS" ]; then cp "$TSV" "$RESULTS"; log "raw results written to $RESULTS"; fi
