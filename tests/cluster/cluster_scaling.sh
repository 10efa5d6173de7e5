#!/bin/bash
# cluster_scaling.sh MICRODDP — measure_scaling.sh end to end at toy sizes: 1 and 2 emulated hosts,
# strategy flat, 2 steps, a 4 B..64 KiB fit. Checks the pipeline, not the numbers: scaling.csv holds
# a row per (mode, host count), each with a measured and a predicted efficiency; the prediction came
# from the fit of the shaped link (model.json from bench collectives on the hosts), not from the
# default 10 Gbit/s link of aggregate.sbatch, and assumed the run's strategy (flat, not analyze's
# default bucketed); the 2-host runs ran on two hosts (ranks per node 1); the plot exists.
# One strategy keeps it short (each mpirun through the cluster costs ~1-2 s). Exit 77 (skipped)
# where the cluster cannot run, as measure_scaling.sh.
set -euo pipefail
bin=$(readlink -f "$1")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/mddp-cluster-scaling.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

rc=0
HOSTS="1 2" STRATEGIES=flat STEPS=2 WIDTH=32 DEPTH=2 GLOBAL_BATCH=16 BATCH_PER_RANK=8 ITERS=2 MAX_BYTES=65536 RATE=1gbit \
  "$here/measure_scaling.sh" "$bin" "$work/out" >"$work/log" 2>&1 || rc=$?
[ "$rc" != 77 ] || { grep SKIP "$work/log"; exit 77; }
[ "$rc" = 0 ] || { cat "$work/log"; fail "measure_scaling.sh exited $rc"; }

csv=$work/out/scaling.csv
header=$(head -1 "$csv")
col() { tr , '\n' <<<"$header" | grep -nx "$1" | cut -d: -f1; }
for c in mode strategy ranks comm_pct forward_ms backward_ms efficiency_measured efficiency_predicted efficiency_error_pct; do
  [ -n "$(col "$c")" ] || fail "scaling.csv has no column '$c': $header"
done
[ "$(tail -n +2 "$csv" | wc -l)" = 4 ] || fail "scaling.csv should have 4 rows (2 modes x 2 host counts): $(cat "$csv")"
for key in strong,flat,1 strong,flat,2 weak,flat,1 weak,flat,2; do
  row=$(grep "^$key," "$csv") || fail "no row $key in scaling.csv"
  pred=$(cut -d, -f"$(col efficiency_predicted)" <<<"$row")
  meas=$(cut -d, -f"$(col efficiency_measured)" <<<"$row")
  [[ $pred =~ ^[0-9.]+$ && $meas =~ ^[0-9.]+$ ]] || fail "row $key: measured '$meas', predicted '$pred' (both must be numbers)"
done
for f in "$work"/out/predicted_*.json; do
  grep -q "fitted model of backend 'mpi'" "$f" || fail "$(basename "$f"): the prediction did not use the fitted model of the shaped link"
  s=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["scaling"]["strategy"])' "$f")
  [ "$s" = flat ] || fail "$(basename "$f"): the prediction assumed strategy '$s', the runs used flat"
done
for f in "$work"/out/*_n2_*.jsonl; do
  grep -q '"ranks_per_node":1' "$f" || fail "$(basename "$f"): the 2-rank run did not have one rank per host"
done
[ -s "$work/out/scaling_efficiency.png" ] || fail "no scaling_efficiency.png"
grep -q "links 1gbit" "$work/out/provenance.txt" || fail "provenance.txt does not name the link rate"
echo "ok   measure_scaling.sh on 1 and 2 hosts: 4 rows, each measured and predicted (flat) from the link's fit"
