#!/usr/bin/env bash
# Cost of the lab's data directory snapshot/restore (src/lab/datadir.rs)
# against plain `cp -a`, on a 1 GiB tree shaped like a server's datadir.
#
#   bench/datadir-restore.sh
#
# Builds nothing: runs `$DBBENCH lab copy-datadir snapshot|restore SRC DST`,
# which prints the operation's CopyStats as one JSON line. The tree is made
# in a temporary directory under WORK_PARENT, so every copy stays on one
# filesystem (a reflink cannot cross filesystems), and is removed on exit.
#
# Timed steps, each ROUNDS times (wall time measured here; "dbbench s" is
# the tool's own CopyStats.seconds; medians and min-max are printed):
#   1. snapshot live → snap
#   2. restore snap → live, nothing changed
#   3. restore snap → live after MODIFIED files were rewritten
#   4. restore snap → a missing directory (full copy)
#   5. cp -a snap → copy, then sync
#   6. rm -rf copy, cp -a snap → copy, then sync (a naive restore)
# dbbench's snapshot and restore end with syncfs, so the cp -a steps include
# a `sync` to compare like with like. (coreutils 9's cp reflinks by default
# where it can, so on btrfs/XFS cp -a is a reflink copy too.) Before each step dirty pages are
# written (sync) so a step does not pay for the previous one's writeback;
# the page cache stays warm unless DROP_CACHES=1. Rounds matter: on the
# development VM a full copy into space not written for a while took up to
# ~5x as long as one into space just freed, whatever the tool, so a single
# round favours whichever step happens to reuse space. Targets are removed
# (untimed, then sync) before each step.
#
# Environment (defaults in brackets):
#   DBBENCH [target/release/dbbench]
#   WORK_PARENT [/var/tmp]   where the temporary tree is made
#   BIG_MIB [512]            size of the one large file (ibdata1-like)
#   SMALL_FILES [256]        number of small files (tables), over 4 schemas
#   SMALL_MIB [2]            size of each small file
#   MODIFIED [8]             small files rewritten before step 3
#   ROUNDS [3]               rounds of the six steps
#   STEP_TIMEOUT [300]       seconds a step may take before it is killed
#   DROP_CACHES [0]          1: drop the page cache before each step (root)
#   VERIFY [1]               1: check restored trees equal the snapshot (diff -r, untimed)
#   KEEP [0]                 1: keep the temporary tree
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$REPO"

DBBENCH=${DBBENCH:-target/release/dbbench}
WORK_PARENT=${WORK_PARENT:-/var/tmp}
BIG_MIB=${BIG_MIB:-512}
SMALL_FILES=${SMALL_FILES:-256}
SMALL_MIB=${SMALL_MIB:-2}
MODIFIED=${MODIFIED:-8}
ROUNDS=${ROUNDS:-3}
STEP_TIMEOUT=${STEP_TIMEOUT:-300}
DROP_CACHES=${DROP_CACHES:-0}
VERIFY=${VERIFY:-1}
KEEP=${KEEP:-0}

die() { echo "datadir-restore.sh: $*" >&2; exit 1; }

[[ -x $DBBENCH ]] || die "no dbbench binary at $DBBENCH; build it (cargo build --release) or set DBBENCH=/path/to/dbbench"
for n in BIG_MIB SMALL_FILES SMALL_MIB MODIFIED ROUNDS STEP_TIMEOUT; do
    [[ ${!n} =~ ^[0-9]+$ ]] || die "$n=${!n} is not a whole number; give a count"
done
((ROUNDS >= 1)) || die "ROUNDS=$ROUNDS: give at least 1"
((MODIFIED <= SMALL_FILES)) || die "MODIFIED=$MODIFIED exceeds SMALL_FILES=$SMALL_FILES; lower it"
[[ -d $WORK_PARENT ]] || die "WORK_PARENT=$WORK_PARENT is not a directory; create it or choose another"
if [[ $DROP_CACHES == 1 && ! -w /proc/sys/vm/drop_caches ]]; then
    die "DROP_CACHES=1 needs a writable /proc/sys/vm/drop_caches; run as root or leave DROP_CACHES=0"
fi

TREE_MIB=$((BIG_MIB + SMALL_FILES * SMALL_MIB))
# live + snap + full restore + cp -a copy, plus 10% slack.
NEED_KIB=$((TREE_MIB * 1024 * 4 * 11 / 10))
AVAIL_KIB=$(df -Pk "$WORK_PARENT" | awk 'NR == 2 { print $4 }')
((AVAIL_KIB >= NEED_KIB)) || die "$WORK_PARENT has $((AVAIL_KIB / 1024)) MiB free, needs $((NEED_KIB / 1024)) MiB (4 copies of a $TREE_MIB MiB tree); free space or set WORK_PARENT"

WORK=$(mktemp -d "$WORK_PARENT/dbbench-datadir-restore.XXXXXX")
cleanup() {
    if [[ $KEEP == 1 ]]; then
        echo "kept $WORK" >&2
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The hidden subcommand must exist in this binary: probe it on an empty tree.
mkdir "$WORK/probe"
if ! probe=$(timeout 30 "$DBBENCH" lab copy-datadir snapshot "$WORK/probe" "$WORK/probe-snap" 2>&1) ||
    [[ $probe != *'"method"'* ]]; then
    die "$DBBENCH does not run 'lab copy-datadir' (said: ${probe//$'\n'/ }); use a dbbench build that has it"
fi
rm -rf "$WORK/probe" "$WORK/probe-snap"

FSTYPE=$(stat -f -c %T "$WORK")

echo "making a $TREE_MIB MiB tree in $WORK ($FSTYPE): 1 x $BIG_MIB MiB + $SMALL_FILES x $SMALL_MIB MiB from /dev/urandom" >&2
LIVE=$WORK/live SNAP=$WORK/snap FULL=$WORK/full COPY=$WORK/copy
mkdir -p "$LIVE"/{mysql,db0,db1,db2,db3}
head -c "$((BIG_MIB * 1048576))" /dev/urandom >"$LIVE/ibdata1"
head -c 1048576 /dev/urandom >"$LIVE/ib_logfile0"
head -c 4096 /dev/urandom >"$LIVE/mysql/user.MYD"
ln -s ibdata1 "$LIVE/ibdata.link"
for ((i = 0; i < SMALL_FILES; i++)); do
    head -c "$((SMALL_MIB * 1048576))" /dev/urandom >"$LIVE/db$((i % 4))/t$i.ibd"
done
sync

prepare_step() {
    sync
    if [[ $DROP_CACHES == 1 ]]; then echo 3 >/proc/sys/vm/drop_caches; fi
}

# now: seconds since the epoch with nanoseconds.
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

# JSON field of a flat one-line object (the CopyStats line).
field() { sed -n "s/.*\"$2\":\\(\"[^\"]*\"\\|[^,}]*\\).*/\\1/p" <<<"$1" | tr -d '"'; }

# Per step label, in first-run order: wall times, dbbench's own seconds, and
# what the last round's CopyStats said.
LABELS=()
declare -A WALL DBS INFO
record() { # LABEL WALL [DBBENCH_S INFO]
    [[ -v "WALL[$1]" ]] || LABELS+=("$1")
    WALL[$1]+="$2 "
    DBS[$1]+="${3:--} "
    INFO[$1]=${4:-"- - - -"}
}
# run_dbbench LABEL snapshot|restore SRC DST
run_dbbench() {
    local label=$1 out t0 t1
    prepare_step
    t0=$(now)
    out=$(timeout "$STEP_TIMEOUT" "$DBBENCH" lab copy-datadir "$2" "$3" "$4") ||
        die "step '$label' failed or exceeded STEP_TIMEOUT=${STEP_TIMEOUT}s (output: $out)"
    t1=$(now)
    out=$(grep '"method"' <<<"$out" | tail -n 1)
    [[ -n $out ]] || die "step '$label': no CopyStats JSON line from $DBBENCH"
    record "$label" "$(elapsed "$t0" "$t1")" "$(field "$out" seconds)" \
        "$(field "$out" method) $(field "$out" files_copied) $(awk -v b="$(field "$out" bytes_copied)" 'BEGIN { printf "%.1f", b / 1048576 }') $(field "$out" files_removed)"
    LAST_JSON=$out
}
# run_shell LABEL COMMAND...: timed with a final sync
run_shell() {
    local label=$1 t0 t1
    shift
    prepare_step
    t0=$(now)
    timeout "$STEP_TIMEOUT" "$@" || die "step '$label' failed or exceeded STEP_TIMEOUT=${STEP_TIMEOUT}s"
    sync
    t1=$(now)
    record "$label" "$(elapsed "$t0" "$t1")"
}
verify() {
    [[ $VERIFY == 1 ]] || return 0
    diff -r --no-dereference "$SNAP" "$1" >/dev/null ||
        die "$1 differs from the snapshot after '$2' (diff -r --no-dereference $SNAP $1); this is a dbbench bug"
}
# Untimed removal, written out before the next step.
remove() { rm -rf "$@"; sync; }

MOD_LABEL="restore, $MODIFIED files modified ($((MODIFIED * SMALL_MIB)) MiB)"
for ((round = 1; round <= ROUNDS; round++)); do
    echo "round $round of $ROUNDS" >&2
    # The snapshot the restores use is round 1's; later rounds snapshot into
    # $FULL, which the full-copy step below removes first.
    if ((round == 1)); then
        run_dbbench "snapshot" snapshot "$LIVE" "$SNAP"
        SNAP_METHOD=$(field "$LAST_JSON" method)
        verify "$LIVE" snapshot
    else
        remove "$FULL"
        run_dbbench "snapshot" snapshot "$LIVE" "$FULL"
    fi
    run_dbbench "restore, no change" restore "$SNAP" "$LIVE"
    for ((i = 0; i < MODIFIED; i++)); do
        # Same size, new bytes, in place: what a server's page writes look
        # like. Different files each round.
        f=$(((round * MODIFIED + i) % SMALL_FILES))
        dd if=/dev/urandom of="$LIVE/db$((f % 4))/t$f.ibd" bs=1M count="$SMALL_MIB" conv=notrunc status=none
    done
    run_dbbench "$MOD_LABEL" restore "$SNAP" "$LIVE"
    verify "$LIVE" "restore after modification"
    remove "$FULL"
    run_dbbench "restore into missing dir (full copy)" restore "$SNAP" "$FULL"
    verify "$FULL" "restore into a missing directory"
    remove "$COPY"
    run_shell "cp -a + sync (full copy)" cp -a "$SNAP" "$COPY"
    # shellcheck disable=SC2016 # expanded by the inner bash
    run_shell "rm -rf + cp -a + sync (naive restore)" bash -c 'rm -rf "$1" && cp -a "$2" "$1"' _ "$COPY" "$SNAP"
done

# median, min and max of a list of numbers ("-" when none).
stats() { tr ' ' '\n' <<<"$1" | grep -v '^-\?$' | sort -g | awk '
    { v[NR] = $1 }
    END { if (NR == 0) { print "- - -"; exit }
          m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
          printf "%.3f %.3f %.3f\n", m, v[1], v[NR] }'; }

echo
TREE_BYTES=$(find "$SNAP" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
echo "filesystem: $FSTYPE ($WORK_PARENT); tree: $(awk -v b="$TREE_BYTES" 'BEGIN { printf "%.1f", b / 1048576 }') MiB in $((SMALL_FILES + 3)) files and 1 symlink; reflink: $([[ $SNAP_METHOD == reflink ]] && echo "yes (snapshot method reflink)" || echo "no (snapshot method $SNAP_METHOD)")"
echo "$ROUNDS rounds; page cache: $([[ $DROP_CACHES == 1 ]] && echo "dropped before each step" || echo "warm (files just written)"); dirty pages synced before each step"
echo
printf '%-40s %8s %15s %10s %8s %7s %10s %8s\n' step "wall s" "(min-max)" "dbbench s" method copied "MiB copied" removed
for l in "${LABELS[@]}"; do
    read -r wmed wmin wmax <<<"$(stats "${WALL[$l]}")"
    read -r dmed _ _ <<<"$(stats "${DBS[$l]}")"
    read -r method copied mib removed <<<"${INFO[$l]}"
    printf '%-40s %8s %15s %10s %8s %7s %10s %8s\n' "$l" "$wmed" "($wmin-$wmax)" "$dmed" "$method" "$copied" "$mib" "$removed"
done
echo "(wall s and dbbench s: medians over the rounds; method, copied, MiB and removed: last round)"
