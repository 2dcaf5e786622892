#!/usr/bin/env bash
# How long `dbbench report` takes over one experiment of 10 000 runs
# (issue 5's target: under 2 seconds), for the text layout alone and with
# every export (HTML, JSON, CSV, Markdown, XLSX).
#
#   bench/report-10k.sh            # 5 configurations x 10 workloads x 10 thread counts x 20 repeats
#   INTERVALS=60 bench/report-10k.sh
#
# The store is made like this: a real one-run lab on SQLite gives the schema
# and one real run (its figures, latency histogram and interval series);
# Python then adds an experiment whose 10 000 runs are copies of it with
# their throughput scaled by a seeded pseudo-random factor per run. The
# figures are synthetic; the work the report does on them (reading every
# run, merging every histogram, the series of every run, all layouts) is
# the real work of a real experiment of that size.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
DBBENCH=${DBBENCH:-target/release/dbbench}
CONFIGS=${CONFIGS:-5} WORKLOADS=${WORKLOADS:-10} THREADS=${THREADS:-10} REPEATS=${REPEATS:-20} INTERVALS=${INTERVALS:-30}
ROUNDS=${ROUNDS:-3}
[ -x "$DBBENCH" ] || { echo "build first: cargo build --release" >&2; exit 1; }
command -v python3 >/dev/null || { echo "python3 is needed to fill the store" >&2; exit 1; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/dbbench-report-bench.XXXXXX")
trap 'rm -rf "$dir"' EXIT
cat >"$dir/seed.toml" <<'EOF'
[experiment]
name = "seed"
threads = [1]
time = 1
options = { tables = 1, table-size = 1000 }

[[configuration]]
name = "only"
server = "sqlite"

[[workload]]
test = "oltp_point_select"
EOF
"$DBBENCH" lab run "$dir/seed.toml" >/dev/null 2>&1 || { echo "the seed lab failed" >&2; exit 1; }
store="$dir/dbbench-lab/results.sqlite"

python3 - "$store" "$CONFIGS" "$WORKLOADS" "$THREADS" "$REPEATS" "$INTERVALS" <<'EOF'
import json, random, sqlite3, sys
store, nc, nw, nt, nr, ni = sys.argv[1], *map(int, sys.argv[2:])
db = sqlite3.connect(store)
run = db.execute("SELECT * FROM runs LIMIT 1").fetchone()
cols = [d[0] for d in db.execute("SELECT * FROM runs LIMIT 1").description]
seed_run = dict(zip(cols, run))
spec = "[experiment]\nname = \"big\"\n" + "".join(f"\n[[workload]]\nname = \"w{w}\"\ntest = \"oltp_point_select\"\n" for w in range(nw))
host = db.execute("SELECT host FROM experiments LIMIT 1").fetchone()[0]
settings = json.dumps({"repeats": nr, "time_s": 60, "warmup_s": 10, "order": "interleaved", "seed": 1, "sample_interval_s": 1})
cur = db.execute("INSERT INTO experiments (name, description, spec_path, spec_text, spec_hash, status, started_at, dbbench_version, host, settings) "
                 "VALUES ('big', 'synthetic: copies of one real run', 'big.toml', ?, 'h', 'finished', '2026-01-01T00:00:00.000Z', '0.1.0', ?, ?)", (spec, host, settings))
e = cur.lastrowid
rng = random.Random(1)
threads = [2 ** i for i in range(nt)]
run_cols = [c for c in cols if c not in ("id", "cell_id", "repeat", "seq", "tps", "qps", "rw_qps")]
seq = 0
for c in range(nc):
    conf = db.execute("INSERT INTO configurations (experiment_id, position, name, kind, definition, variables) VALUES (?, ?, ?, 'sqlite', '{}', ?)",
                      (e, c, f"c{c}", json.dumps({"x": str(c), "port": str(3306 + c)}))).lastrowid
    for w in range(nw):
        for t in threads:
            cell = db.execute("INSERT INTO cells (experiment_id, configuration_id, workload, threads) VALUES (?, ?, ?, ?)", (e, conf, f"w{w}", t)).lastrowid
            for r in range(1, nr + 1):
                seq += 1
                f = (1 + 0.1 * c) * rng.uniform(0.95, 1.05)
                vals = [seed_run[k] for k in run_cols]
                rid = db.execute(f"INSERT INTO runs (cell_id, \"repeat\", seq, tps, qps, rw_qps, {', '.join(chr(34)+k+chr(34) for k in run_cols)}) "
                                 f"VALUES (?, ?, ?, ?, ?, ?, {', '.join('?' * len(run_cols))})",
                                 [cell, r, seq, seed_run["tps"] * f, seed_run["qps"] * f, (seed_run["rw_qps"] or 0) * f, *vals]).lastrowid
                db.executemany("INSERT INTO run_intervals (run_id, time_s, tps, qps) VALUES (?, ?, ?, ?)",
                               [(rid, float(i), seed_run["tps"] * f * rng.uniform(0.9, 1.1), seed_run["qps"] * f) for i in range(-9, ni - 9)])
db.commit()
print(f"store: {seq} runs in experiment 'big', {seq * ni} interval rows, {db.execute('SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()').fetchone()[0] / 1e6:.0f} MB")
EOF

measure() {   # label, then dbbench report arguments
    local label=$1; shift
    local best="" all=""
    for _ in $(seq "$ROUNDS"); do
        local t
        /usr/bin/time -f "%e %M" -o "$dir/time" "$DBBENCH" report "--store=$store" --experiment=big "$@" >/dev/null 2>"$dir/err" ||
            { echo "dbbench report failed:" >&2; cat "$dir/err" >&2; exit 1; }
        t=$(tail -1 "$dir/time")
        all="$all ${t%% *}"
        best=$t
    done
    printf '%-34s wall s per round:%s   peak RSS %s MB\n' "$label" "$all" "$(awk -v k="${best##* }" 'BEGIN{printf "%.0f", k/1024}')"
}
echo "dbbench report over $((CONFIGS * WORKLOADS * THREADS * REPEATS)) runs ($CONFIGS configurations x $WORKLOADS workloads x $THREADS thread counts x $REPEATS repeats), $ROUNDS rounds:"
measure "text (stdout)"
measure "text + every export" --export-html="$dir/r.html" --export-json="$dir/r.json" --export-csv="$dir/r.csv" --export-markdown="$dir/r.md" --export-xlsx="$dir/r.xlsx"
ls -l "$dir"/r.* | awk '{printf "  %-8s %6.1f MB\n", substr($NF, length($NF) - 3), $5 / 1e6}'
