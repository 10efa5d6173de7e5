#!/bin/bash
# run_fuzz.sh — a short libFuzzer run of every fuzz target (CI: 15 s each), from a build made with
# the `asan` preset (clang, ASan+UBSan, MICRODDP_FUZZ=ON; build preset `fuzz` builds just the targets).
# Usage: run_fuzz.sh [BUILD_DIR (default build-asan)] [SECONDS per target (default 20)]
#
# The kept corpus (tests/fuzz/corpus/<target>/) seeds each run; new interesting inputs go to a
# scratch copy, never into the repository. On a finding, libFuzzer writes the input to
# $BUILD_DIR/fuzz-artifacts/<target>-crash-...; fix the bug, then copy that file into
# tests/fuzz/corpus/<target>/ so the normal build replays it forever (ctest -L fuzz).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="$(cd "${1:-build-asan}" && pwd)"
seconds="${2:-20}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
seeds="$build/tests/fuzz/seeds"
# The seeds come from the sanitized microddp; Open MPI's own start-up leaks are not what we test here.
ASAN_OPTIONS=detect_leaks=0 "$here/make_seeds.sh" "$build/microddp" "$seeds" >/dev/null
export MICRODDP_FUZZ_CHECKPOINT="$seeds/checkpoint.h5" MICRODDP_FUZZ_DATASET="$seeds/dataset.h5"
artifacts="$build/fuzz-artifacts"; mkdir -p "$artifacts"
failed=0
for t in fuzz_command_line fuzz_bench_rows fuzz_comm_model fuzz_h5_header fuzz_npy_header fuzz_idx_header; do
  work="$build/fuzz-corpus/$t"; mkdir -p "$work"
  log="$build/fuzz-$t.log"
  # -rss_limit_mb: a parser that allocates what a header claims must fail here, not on a cluster.
  if "$build/tests/fuzz/${t}_libfuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
       -max_len=4096 -artifact_prefix="$artifacts/$t-" -print_final_stats=1 \
       "$work" "$here/corpus/$t" >"$log" 2>&1; then
    echo "ok   $t: $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$') inputs in ${seconds} s, corpus $(ls "$work" | wc -l)"
  else
    failed=$((failed + 1))
    echo "FAIL $t: see $log and $artifacts/"
    grep -m5 -E "ERROR|SUMMARY|uncaught|deadly" "$log" | sed 's/^/    /'
  fi
done
[ "$failed" -eq 0 ]
