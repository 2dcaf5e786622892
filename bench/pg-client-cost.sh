#!/usr/bin/env bash
# The PostgreSQL client's own cost: user-space instructions per query under
# valgrind's callgrind, one client on the server's unix socket, for sysbench
# 1.0.20 (libpq), dbbench's native client (--pgsql-client=native, the
# default) and dbbench through the postgres crate (--pgsql-client=crate).
#
#   bench/pg-client-cost.sh
#   WORKLOADS="oltp_point_select" EVENTS="2000 12000" bench/pg-client-cost.sh
#
# Each figure is the difference between a run of the larger and of the
# smaller number of events, divided by the difference in queries, so that
# start-up (LuaJIT, connecting, preparing) cancels out. Instruction counts
# do not depend on how busy the host is; they are the steady measure of
# the client itself (the server's work is not counted: another process).
#
# Environment (defaults in brackets):
#   DBBENCH [target/release/dbbench]   SYSBENCH [sysbench]
#   WORKLOADS [oltp_point_select oltp_read_only]
#   EVENTS ["2000 12000"]   TABLE_SIZE [10000]
#   SERVERS_DIR  servers started by `scripts/servers.sh up DIR` (its env
#                file is read); else the script starts its own and stops them
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

DBBENCH=${DBBENCH:-target/release/dbbench}
SYSBENCH=${SYSBENCH:-sysbench}
WORKLOADS=${WORKLOADS:-oltp_point_select oltp_read_only}
EVENTS=${EVENTS:-2000 12000}
TABLE_SIZE=${TABLE_SIZE:-10000}
SERVERS_DIR=${SERVERS_DIR:-}

die() { echo "pg-client-cost.sh: $*" >&2; exit 1; }
command -v valgrind >/dev/null || die "valgrind not found (apt-get install -y valgrind)"
command -v "$SYSBENCH" >/dev/null || die "$SYSBENCH not found (apt-get install -y sysbench)"
[ -x "$DBBENCH" ] || die "$DBBENCH not found (cargo build --release)"
read -r EV_LO EV_HI <<<"$EVENTS"
[[ "$EV_LO" =~ ^[0-9]+$ && "${EV_HI:-}" =~ ^[0-9]+$ ]] && [ "$EV_HI" -gt "$EV_LO" ] ||
    die "EVENTS must be two event counts, the second larger, not '$EVENTS'"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/dbbench-pg-client-cost.XXXXXX")
chmod 711 "$WORK"   # the postgres user reaches its socket directory inside
OWN=0
cleanup() {
    [ "$OWN" = 0 ] || scripts/servers.sh down "$SERVERS_DIR" >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT
if [ -z "$SERVERS_DIR" ]; then
    SERVERS_DIR=$WORK/srv
    OWN=1
    scripts/servers.sh up "$SERVERS_DIR" --only postgresql >"$WORK/servers.log" 2>&1 ||
        { cat "$WORK/servers.log" >&2; die "starting PostgreSQL failed"; }
fi
# shellcheck disable=SC1091
. "$SERVERS_DIR/env"
DRV=(--db-driver=pgsql "--pgsql-host=$DBBENCH_TEST_PGSQL_HOST" "--pgsql-port=$DBBENCH_TEST_PGSQL_PORT"
    --pgsql-user=sbtest --pgsql-db=sbtest --tables=1 "--table-size=$TABLE_SIZE")

"$SYSBENCH" oltp_point_select "${DRV[@]}" cleanup >/dev/null 2>&1 || true
"$SYSBENCH" oltp_point_select "${DRV[@]}" prepare >"$WORK/prepare.log" 2>&1 ||
    { cat "$WORK/prepare.log" >&2; die "prepare failed"; }

# count TOOL WORKLOAD EVENTS: "instructions queries" of one callgrind run.
count() {
    local tool=$1 wl=$2 ev=$3 base
    base="$WORK/$tool-$wl-$ev"
    local cmd=("$SYSBENCH")
    case $tool in
        native) cmd=("$DBBENCH" --pgsql-client=native) ;;
        crate) cmd=("$DBBENCH" --pgsql-client=crate) ;;
    esac
    valgrind --tool=callgrind --smc-check=all --callgrind-out-file="$base.cg" "${cmd[@]}" "$wl" "${DRV[@]}" \
        --threads=1 "--events=$ev" --time=0 run </dev/null >"$base.out" 2>"$base.err" ||
        { tail -n 5 "$base.err" >&2; die "callgrind $tool $wl --events=$ev failed"; }
    echo "$(awk '$1 == "summary:" { print $2 }' "$base.cg") $(awk '$1 == "queries:" { print $2 }' "$base.out" | tail -n 1)"
}

echo "PostgreSQL $(psql -X -At -h "$DBBENCH_TEST_PGSQL_HOST" -p "$DBBENCH_TEST_PGSQL_PORT" -U sbtest -d sbtest -c 'SHOW server_version' 2>/dev/null || echo '?'), unix socket, 1 client; user-space instructions (callgrind), runs of $EV_HI and $EV_LO events subtracted"
printf '%-18s %-16s %12s %10s\n' workload client instr/query vs-sysbench
for wl in $WORKLOADS; do
    declare -A PER_Q=()
    for tool in sysbench native crate; do
        read -r ir_lo q_lo <<<"$(count "$tool" "$wl" "$EV_LO")"
        read -r ir_hi q_hi <<<"$(count "$tool" "$wl" "$EV_HI")"
        PER_Q[$tool]=$(awk -v a="$ir_lo" -v b="$ir_hi" -v p="$q_lo" -v q="$q_hi" 'BEGIN { printf "%.0f", (b - a) / (q - p) }')
        label=$tool
        [ "$tool" = sysbench ] || label="dbbench $tool"
        printf '%-18s %-16s %12s %9sx\n' "$wl" "$label" "${PER_Q[$tool]}" \
            "$(awk -v a="${PER_Q[$tool]}" -v b="${PER_Q[sysbench]}" 'BEGIN { printf "%.2f", a / b }')"
    done
done
