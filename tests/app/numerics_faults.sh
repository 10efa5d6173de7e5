#!/bin/bash
# numerics_faults.sh — `microddp train` at 3 ranks with the hidden fault hooks (docs/reliability.md):
#   * MICRODDP_FAULT_NAN=1:3 with --on-nan abort: EVERY rank exits 1 after step 2 (each rank's exit
#     code is recorded by a wrapper), rank 0 prints the message naming step 3, no MPI_Abort.
#   * the same NaN, in the input or only in rank 1's synchronised gradient, with --on-nan skip: the
#     run finishes (exit 0), reports 1 skipped step, and both runs end with the same parameter
#     checksum — which differs from the clean run's (the update of step 3 really is absent).
#   * MICRODDP_FAULT_PERTURB=2:4:layer_03.weight with --check-every 2: every rank exits 1 with
#     "ranks diverged after step 4: layer_03.weight differs on rank(s) 2 from rank 0".
#   * --clip-grad-norm is shown in the header and runs to the end.
# Every run is under a timeout (a hang fails the test).
# Usage: numerics_faults.sh <path-to-microddp> <mpiexec> [mpiexec preflags...]
set -u
bin="$1"; shift
mpiexec="$1"; shift
mpi_flags=("$@")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
t=(train --steps 6 --width 16 --depth 3 --global-batch 30 --threads 1 --log-every 1)

# run NAME [env...] -- args: every rank runs through a wrapper that prints "rank-exit R CODE" and
# exits 0, so the launcher never kills a rank that is still reporting.
run() {
  local name="$1"; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  timeout 120 env "${envs[@]}" "$mpiexec" -np 3 "${mpi_flags[@]}" \
    sh -c '"$@"; echo "rank-exit ${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-?}} $?" >&2' sh "$bin" "$@" \
    > "$dir/$name.out" 2> "$dir/$name.err"
  echo "--- $name (launcher exit $?)"; cat "$dir/$name.err" | grep -v "^rank-exit" | head -5
}
exits() { grep "^rank-exit" "$dir/$1.err" | awk '{print $3}' | sort | tr '\n' ' '; }
checksum() { sed -nE 's/.*parameter checksum ([0-9a-f]+).*/\1/p' "$dir/$1.out"; }

run abort MICRODDP_FAULT_NAN=1:3 -- "${t[@]}"
[ "$(exits abort)" = "1 1 1 " ] || fail "abort: rank exit codes '$(exits abort)', want '1 1 1 '"
grep -q "non-finite values at step 3" "$dir/abort.err" || fail "abort: no message naming step 3"
grep -qi "MPI_ABORT" "$dir/abort.err" && fail "abort: went through MPI_Abort"
grep -qE "^ +3 " "$dir/abort.out" && fail "abort: step 3 was reported as taken"

run skip_input MICRODDP_FAULT_NAN=1:3:input -- "${t[@]}" --on-nan skip --check-every 1
run skip_grad MICRODDP_FAULT_NAN=1:3:grad -- "${t[@]}" --on-nan skip --check-every 1
run clean -- "${t[@]}" --on-nan skip --check-every 1
for r in skip_input skip_grad clean; do
  [ "$(exits $r)" = "0 0 0 " ] || fail "$r: rank exit codes '$(exits $r)', want '0 0 0 '"
done
for r in skip_input skip_grad; do
  grep -q "1 step skipped" "$dir/$r.out" || fail "$r: summary does not report 1 skipped step"
  grep -q "non-finite values at step 3.*update skipped" "$dir/$r.err" || fail "$r: no skip warning"
done
grep -q "gradient non-finite on rank(s) 1;" "$dir/skip_grad.err" || fail "skip_grad: warning does not name rank 1 alone"
[ -n "$(checksum skip_input)" ] && [ "$(checksum skip_input)" = "$(checksum skip_grad)" ] ||
  fail "skipped runs end differently: $(checksum skip_input) vs $(checksum skip_grad)"
[ "$(checksum skip_input)" != "$(checksum clean)" ] || fail "skipping step 3 changed nothing (test is vacuous)"

run diverge MICRODDP_FAULT_PERTURB=2:4:layer_03.weight -- "${t[@]}" --check-every 2
[ "$(exits diverge)" = "1 1 1 " ] || fail "diverge: rank exit codes '$(exits diverge)', want '1 1 1 '"
grep -q "ranks diverged after step 4: layer_03.weight differs on rank(s) 2 from rank 0" "$dir/diverge.err" ||
  fail "diverge: message does not name layer_03.weight, step 4 and rank 2"

run clip -- "${t[@]}" --clip-grad-norm 0.01
[ "$(exits clip)" = "0 0 0 " ] || fail "clip: rank exit codes '$(exits clip)'"
grep -q "grad clipping to norm 0.01" "$dir/clip.out" || fail "clip: header does not show the clipping norm"

if [ "$failures" -eq 0 ]; then echo "all passed"; else echo "$failures failed"; fi
[ "$failures" -eq 0 ]
