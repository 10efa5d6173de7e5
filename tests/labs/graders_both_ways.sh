#!/bin/bash
# graders_both_ways.sh SRC_DIR MPIEXEC [MPIEXEC_FLAGS...] -- STUDENT_GRADER SOLUTION_GRADER [...]
# graders_both_ways.sh --no-mpi SRC_DIR -- STUDENT_GRADER SOLUTION_GRADER [...]
# Proves each lab grader both ways (docs/labs/README.md): built against the untouched starter it
# must FAIL, and say why; built against the reference solution it must PASS, at 1, 3 and 4 ranks
# (1: nothing to send; 3: counts that do not divide; 4: a power of two). With --no-mpi (one-process
# graders: lab 13's GPU kernels) each grader runs once, as a plain program.
# The starter half runs only while the student's file is the starter recorded in
# tests/labs/starters.sha256: once a student edits a lab file, their grader is theirs to pass
# (ctest -L lab), and this test checks the solutions only.
set -uo pipefail
no_mpi=no
if [ "${1:-}" = "--no-mpi" ]; then no_mpi=yes; shift; fi
src=$1; shift
mpi=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do mpi+=("$1"); shift; done
shift || { echo "usage: $0 [--no-mpi] SRC_DIR [MPIEXEC [FLAGS...]] -- STUDENT SOLUTION [...]" >&2; exit 2; }
[ $(( $# % 2 )) = 0 ] && [ $# -gt 0 ] || { echo "$0: graders come in pairs (student, solution)" >&2; exit 2; }
nps=(1 3 4)
if [ "$no_mpi" = yes ]; then
  [ ${#mpi[@]} = 0 ] || { echo "$0: --no-mpi takes no MPIEXEC" >&2; exit 2; }
  nps=(1)
else
  [ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
fi
# command_for NP PROGRAM: the array `cmd` that runs PROGRAM at NP ranks (with --no-mpi: the program alone).
command_for() { if [ "$no_mpi" = yes ]; then cmd=("$2"); else cmd=("${mpi[@]}" -np "$1" "$2"); fi; }
pristine=$(cd "$src" && sha256sum --quiet -c tests/labs/starters.sha256 2>/dev/null && echo yes || echo no)
failed=0
fail() { echo "FAIL: $*"; failed=1; }
while [ $# -gt 0 ]; do
  student=$1 solution=$2; shift 2
  before=$failed failed=0
  for np in "${nps[@]}"; do
    command_for "$np" "$solution"
    if out=$(timeout 120 "${cmd[@]}" 2>&1); then
      grep -q "^PASS" <<<"$out" || fail "$(basename "$solution") at np $np exited 0 without PASS: $out"
    else
      fail "$(basename "$solution") (reference solution) at np $np: $out"
    fi
  done
  if [ "$pristine" = yes ]; then
    command_for 3 "$student"
    if out=$(timeout 120 "${cmd[@]}" 2>&1); then
      fail "$(basename "$student") PASSED on the untouched starter: the grader cannot fail: $out"
    else
      grep -q "is not done yet" <<<"$out" || fail "$(basename "$student") failed without saying the lab is not done: $out"
    fi
  fi
  [ "$failed" = 0 ] && echo "ok   $(basename "$student"): solution passes$([ "$no_mpi" = no ] && echo " at np 1, 3, 4")$([ "$pristine" = yes ] && echo "; starter fails, saying why")"
  [ "$before" = 0 ] || failed=1
done
[ "$pristine" = yes ] || echo "note: docs/labs differs from the starters: the starter half was not run"
exit "$failed"
