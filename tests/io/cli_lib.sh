#!/bin/bash
# cli_lib.sh — sourced by the io scripts that drive the `microddp` command (idx_cli.sh,
# model_cli.sh, export_numpy.sh): their arguments, a scratch directory, the failure
# count and the MPI launch, written once.
#
#   cli_init "$@"        arguments <microddp> <mpiexec> [mpiexec preflags...]: sets bin, mpiexec,
#                        mpi_flags; tmp (a directory removed at exit); failures=0
#   fail MSG...          prints "FAIL: MSG" and counts it
#   run NP ARGS...       microddp ARGS on NP ranks (120 s at most)
#   cli_python_h5py      sets python to a Python 3 with h5py and numpy ($PYTHON, python3,
#                        /usr/bin/python3), or exits 77 (skipped) saying what to install
#   cli_finish           prints the count; returns non-zero when something failed
set -u

cli_init() {
  bin="$1" mpiexec="$2"
  shift 2
  mpi_flags=("$@")
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  failures=0
}

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

run() {
  local np=$1
  shift
  timeout 120 "$mpiexec" -np "$np" "${mpi_flags[@]}" "$bin" "$@"
}

cli_python_h5py() {
  python=""
  local p
  for p in "${PYTHON:-}" python3 /usr/bin/python3; do
    if [ -n "$p" ] && command -v "$p" >/dev/null 2>&1 && "$p" -c "import h5py, numpy" 2>/dev/null; then
      python="$p"
      return 0
    fi
  done
  echo "SKIP: no Python 3 with h5py and numpy (install python3-h5py python3-numpy, or set PYTHON)"
  exit 77
}

cli_finish() {
  echo "# $failures failure(s)"
  [ "$failures" -eq 0 ]
}
