#!/bin/bash
# regression_matrix.sh — `microddp train` over the strategy x backend x shard x compression matrix at
# tiny sizes, one line per run: the flags, every loss the run printed and the final parameter
# checksum (fault runs: also the message the NaN policy printed). A change that claims "no change of
# behaviour" (a refactoring of the step) must leave every line identical: the losses are printed to
# six digits, the checksum is FNV-1a over the parameter bytes, so one differing bit anywhere shows.
#
# Usage:
#   tests/app/regression_matrix.sh [SET] [-j N] BIN [MPIEXEC [FLAGS...]]
#       print the lines of BIN's runs (exit 1 if a run failed)
#   tests/app/regression_matrix.sh [SET] [-j N] --compare OLD_BIN BIN [MPIEXEC [FLAGS...]]
#       run both binaries on every configuration; exit 1 naming every run whose line differs
#   e.g. tests/app/regression_matrix.sh --compare ../old/build/microddp build-cpu/microddp
# SET:
#   (default)  pairwise: every (strategy, backend), (strategy, mode) and (backend, mode) pair at
#              np 2 at least once (30 runs; mode = --grad-compression none|fp16|bf16|powersgd or
#              --shard optimizer|gradients), plus the extras below; ~50 runs, about 3 minutes
#              comparing two binaries on 2 busy cores (a run is ~1.5 s, mostly process start-up)
#   --full     the whole cross product at np 2 (4 strategies x 5 backends x 6 modes = 120 runs)
#              plus the extras: ~10 minutes comparing two binaries on 2 cores
#   --quick    one run per strategy, backend and mode, and one of each extra kind (~12 runs)
# Extras: np 3 (uneven batch split, hier over 3 ranks), --accum-steps 2 (also under ZeRO-2, whose
# gradient pool it turns off), --clip-grad-norm small enough to bite (also sharded), SGD with
# momentum and AdamW, and the NaN hooks of docs/reliability.md (--on-nan skip on a NaN input and on
# one rank's synchronised gradient, also under fp16, whose message adds its range hint; abort).
# Combinations the app refuses (--shard with --grad-compression) are not in the matrix; a run that
# fails anyway is reported as such and fails the script.
# -j N: runs in parallel (default 2). MPIEXEC defaults to mpirun with --oversubscribe --bind-to none
# --mca mpi_yield_when_idle 1 (Open MPI; as root the OMPI_ALLOW_RUN_AS_ROOT variables are set).
set -euo pipefail

set_name=default
jobs=2
old_bin=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) set_name=quick; shift ;;
    --full) set_name=full; shift ;;
    -j) jobs="$2"; shift 2 ;;
    --compare) old_bin="$2"; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    -*) echo "regression_matrix.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || { echo "usage: regression_matrix.sh [--quick|--full] [-j N] [--compare OLD_BIN] BIN [MPIEXEC [FLAGS...]]" >&2; exit 2; }
new_bin="$1"; shift
if [ $# -gt 0 ]; then
  mpiexec=("$@")
else
  mpiexec=(mpirun --oversubscribe --bind-to none --mca mpi_yield_when_idle 1)
fi
for b in "$new_bin" ${old_bin:+"$old_bin"}; do
  [ -x "$b" ] || { echo "regression_matrix.sh: $b is not an executable" >&2; exit 2; }
done
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
export OMPI_MCA_rmaps_base_oversubscribe=1 MICRODDP_DEVICE=cpu

strategies=(naive flat overlap bucketed)
backends=(mpi ring rd naive hier)
modes=("--shard none --grad-compression none" "--shard none --grad-compression fp16"
  "--shard none --grad-compression bf16" "--shard none --grad-compression powersgd"
  "--shard optimizer --grad-compression none" "--shard gradients --grad-compression none")

# One run: "NP|ENV|FLAGS" (ENV: a MICRODDP_FAULT_* assignment or empty).
runs=()
add() { runs+=("$1|$2|$3"); }
base() { echo "--strategy ${strategies[$1]} --comm ${backends[$2]} ${modes[$3]}"; }

case "$set_name" in
  full)
    for s in 0 1 2 3; do for b in 0 1 2 3 4; do for m in 0 1 2 3 4 5; do add 2 "" "$(base $s $b $m)"; done; done; done ;;
  default)
    # Backend (s + m) mod 5 gives every strategy all five backends (six modes) and every mode four of
    # them; the second loop adds each mode's fifth.
    for s in 0 1 2 3; do for m in 0 1 2 3 4 5; do add 2 "" "$(base $s $(((s + m) % 5)) $m)"; done; done
    for m in 0 1 2 3 4 5; do add 2 "" "$(base $((m % 4)) $(((m + 4) % 5)) $m)"; done ;;
  quick)
    for i in 0 1 2 3 4 5; do add 2 "" "$(base $((i % 4)) $((i % 5)) $i)"; done ;;
esac

# Extras (the quick set takes the first of each kind).
np3=("$(base 3 1 0)" "$(base 2 2 5)" "$(base 1 4 1)" "$(base 0 3 3)" "$(base 3 0 4)")
accum=("$(base 3 0 0)" "$(base 2 1 5)" "$(base 1 2 3)" "$(base 3 4 4)")
clip=("$(base 3 0 0)" "$(base 0 1 4)" "$(base 2 2 2)" "$(base 1 3 5) --accum-steps 2")
optim=("$(base 3 0 0) --optimizer sgd --momentum 0.9 --lr 0.05" "$(base 2 1 4) --optimizer adamw --weight-decay 0.1")
faults=("MICRODDP_FAULT_NAN=1:2:input|$(base 3 0 0) --on-nan skip --check-every 1"
  "MICRODDP_FAULT_NAN=0:3:grad|$(base 3 1 5) --on-nan skip --check-every 1"
  "MICRODDP_FAULT_NAN=1:2:grad|$(base 2 0 1) --on-nan skip"
  "MICRODDP_FAULT_NAN=1:3|$(base 0 2 0) --on-nan abort")
take() { if [ "$set_name" = quick ]; then echo 1; else echo "$1"; fi; }
for ((i = 0; i < $(take ${#np3[@]}); i++)); do add 3 "" "${np3[$i]}"; done
for ((i = 0; i < $(take ${#accum[@]}); i++)); do add 2 "" "${accum[$i]} --accum-steps 2"; done
for ((i = 0; i < $(take ${#clip[@]}); i++)); do add 2 "" "${clip[$i]} --clip-grad-norm 0.02"; done
for ((i = 0; i < $(take ${#optim[@]}); i++)); do add 2 "" "${optim[$i]}"; done
for ((i = 0; i < $(take ${#faults[@]}); i++)); do add 2 "${faults[$i]%%|*}" "${faults[$i]#*|}"; done

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# run_one BIN INDEX TAG: writes $dir/INDEX.TAG, one line.
run_one() {
  local bin="$1" idx="$2" tag="$3"
  local np env flags batch out err sum msg rc=0
  IFS='|' read -r np env flags <<< "${runs[$idx]}"
  batch=24
  [ "$np" = 3 ] && batch=25  # uneven: 9/8/8 rows
  out="$dir/$idx.$tag.out"
  err="$dir/$idx.$tag.err"
  # shellcheck disable=SC2086  # flags are words
  timeout 300 env $env "${mpiexec[@]}" -np "$np" "$bin" train --width 16 --depth 3 --steps 4 --global-batch "$batch" \
    --log-every 1 --threads 1 --bucket-mb 0.001 $flags > "$out" 2> "$err" || rc=$?
  {
    printf 'np=%s %s%s ::' "$np" "${env:+$env }" "$flags"
    # Step lines: "   STEP   LOSS   step_ms ..."; the loss is the second column.
    printf ' losses'
    awk '/^ +[0-9]+ +[-0-9.naif]+ / { printf " %s", $2 }' "$out"
    sum=$(sed -nE 's/.*parameter checksum ([0-9a-f]+).*/\1/p' "$out")
    printf ' :: checksum %s' "${sum:--}"
    # The NaN policy's message (rank 0's skip warning, or the agreed error), without rank prefixes.
    msg=$(grep -m1 -o 'non-finite values.*' "$err" || true)
    [ -n "$msg" ] && printf ' :: %s' "$msg"
    # A run fails unless it finished with a checksum, or the NaN policy aborted it.
    if { [ "$rc" != 0 ] && [ -z "$msg" ]; } || { [ "$rc" = 0 ] && [ -z "$sum" ]; }; then
      printf ' :: FAILED exit %s: %s' "$rc" "$(grep -m1 -i 'error' "$err" || tail -n1 "$err" || true)"
    fi
    printf '\n'
  } > "$dir/$idx.$tag"
}

# Runs every (binary, run) pair, at most $jobs at a time.
tasks=()
for ((i = 0; i < ${#runs[@]}; i++)); do
  [ -n "$old_bin" ] && tasks+=("$old_bin|$i|old")
  tasks+=("$new_bin|$i|new")
done
for t in "${tasks[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  IFS='|' read -r b i tag <<< "$t"
  run_one "$b" "$i" "$tag" &
done
wait

status=0
differ=0
for ((i = 0; i < ${#runs[@]}; i++)); do
  line=$(cat "$dir/$i.new")
  [[ "$line" == *":: FAILED"* ]] && status=1
  if [ -z "$old_bin" ]; then
    echo "$line"
  elif [ "$line" = "$(cat "$dir/$i.old")" ]; then
    echo "same  $line"
  else
    echo "DIFF  old: $(cat "$dir/$i.old")"
    echo "      new: $line"
    differ=$((differ + 1))
  fi
done
if [ -n "$old_bin" ]; then
  if [ "$differ" = 0 ]; then
    echo "# regression matrix ($set_name): all ${#runs[@]} runs identical"
  else
    echo "# regression matrix ($set_name): $differ of ${#runs[@]} runs differ (lines marked DIFF)"
    status=1
  fi
fi
exit "$status"
