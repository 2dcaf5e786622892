#!/usr/bin/env bash
# The figures issue 25 asks to guard, in one run (docs/performance.md):
#
#   bench/guard.sh                 (target/release/dbbench; DBBENCH=... to override)
#
# 1. the client's own cost: user-space instructions per query under
#    callgrind for oltp_point_select and oltp_read_only, dbbench against
#    sysbench 1.0.20 (bench/sysbench-vs-dbbench.sh with one client, no
#    timed runs) on MariaDB ("ipq"), and on PostgreSQL with both of
#    dbbench's clients ("ipq-pg", bench/pg-client-cost.sh);
# 2. prepare: wall and client CPU of dbbench's bulk path, its INSERT path,
#    sysbench and the server's own floor (bench/prepare-speed.sh);
# 3. thousands of clients: peak RSS and QPS against sysbench
#    (bench/client-memory.sh);
# 4. the lab's own cost per run (bench/lab-overhead.sh).
#
# Each part runs its own servers and alternates the tools itself; this
# script only runs them one after the other, keeps each one's whole output
# in OUT_DIR, and prints each part's final table at the end. A part that
# fails is reported and the others still run. Instruction counts are the
# steady figure on a shared VM; the timed parts are medians of ROUNDS
# rounds and say how loaded the host was.
#
# Environment (defaults in brackets):
#   PARTS [ipq ipq-pg prepare clients lab]   which parts to run
#   ROUNDS [3]                        rounds of the timed parts
#   TABLE_SIZE [1000000]              rows per table for the prepare part
#   CLIENTS [4096]                    clients for the memory part
#   OUT_DIR [a new /tmp/dbbench-guard.XXXXXX]
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$REPO"
export DBBENCH=${DBBENCH:-$REPO/target/release/dbbench}
[ -x "$DBBENCH" ] || { echo "guard.sh: $DBBENCH missing; run cargo build --release" >&2; exit 1; }
PARTS=${PARTS:-ipq ipq-pg prepare clients lab}
export ROUNDS=${ROUNDS:-3}
OUT_DIR=${OUT_DIR:-$(mktemp -d /tmp/dbbench-guard.XXXXXX)}
mkdir -p "$OUT_DIR"
failed=()

part() {   # part NAME COMMAND...: run, keep the output, note a failure
    local name=$1
    shift
    echo "guard.sh: $name: $* (output: $OUT_DIR/$name.txt)" >&2
    local start=$SECONDS
    if ! "$@" >"$OUT_DIR/$name.txt" 2>&1; then
        failed+=("$name")
    fi
    echo "guard.sh: $name took $((SECONDS - start)) s; load average now $(cut -d' ' -f1-3 /proc/loadavg)" >&2
}

for p in $PARTS; do
    case $p in
        ipq) part ipq env THREADS= MANY_CLIENTS= CALLGRIND=1 WORKLOADS="oltp_point_select oltp_read_only" \
            bench/sysbench-vs-dbbench.sh ;;
        ipq-pg) part ipq-pg bench/pg-client-cost.sh ;;
        prepare) part prepare env TABLE_SIZE="${TABLE_SIZE:-1000000}" bench/prepare-speed.sh ;;
        clients) part clients env CLIENTS="${CLIENTS:-4096}" bench/client-memory.sh ;;
        lab) part lab bench/lab-overhead.sh ;;
        *) echo "guard.sh: unknown part '$p' (ipq, ipq-pg, prepare, clients, lab)" >&2; exit 1 ;;
    esac
done

# Each part's closing table: from its last header line to the end.
for p in $PARTS; do
    echo
    echo "=================== $p ($OUT_DIR/$p.txt)"
    case $p in
        ipq) sed -n '/=== user-space instructions/,$p' "$OUT_DIR/$p.txt" ;;
        lab) sed -n '/overhead/,$p' "$OUT_DIR/$p.txt" | tail -40 ;;
        *) tail -25 "$OUT_DIR/$p.txt" ;;
    esac
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "guard.sh: failed parts: ${failed[*]} (see their output in $OUT_DIR)" >&2
    exit 1
fi
