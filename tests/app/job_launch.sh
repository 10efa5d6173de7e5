#!/bin/bash
# job_launch.sh — jobs/lib/common.sh's mddp_launch leaves stdout to the command it launches: its
# own "# launch" line goes to stderr, so `mddp_launch 1 microddp evaluate ... --json >F` (what
# jobs/examples/fashion_mnist.sh writes test_eval.json with) is valid JSON.
# Usage: job_launch.sh <microddp> <mpirun> [mpirun flags...]
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="$1"; mpirun="$2"; shift 2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export MICRODDP_BIN="$bin" RESULTS_DIR="$tmp/results" LAUNCHER=mpirun MPIRUN="$mpirun" MPIRUN_FLAGS="$*"
# shellcheck source=../../jobs/lib/common.sh
source "$here/../../jobs/lib/common.sh"
mddp_init
failures=0
"$bin" train --steps 2 --width 8 --depth 1 --global-batch 8 --checkpoint-every 2 --checkpoint-dir "$tmp/ck" >/dev/null 2>&1 ||
  { echo "FAIL: train"; failures=$((failures + 1)); }
"$bin" make-dataset "$tmp/d.h5" --samples 20 --in-dim 8 --classes 2 >/dev/null 2>&1
mddp_launch 1 "$bin" evaluate --checkpoint "$tmp/ck/ckpt_0000000002.h5" --data "$tmp/d.h5" --json >"$tmp/e.json" 2>"$tmp/e.err"
if python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["rows"] == 20' "$tmp/e.json" && grep -q "^# launch" "$tmp/e.err"; then
  echo "ok   mddp_launch ... --json >F: F is JSON; the launch line went to stderr"
else
  echo "FAIL: stdout of mddp_launch: $(head -c 300 "$tmp/e.json")"; failures=$((failures + 1))
fi
[ "$failures" -eq 0 ]
