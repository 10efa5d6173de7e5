#!/bin/bash
# bench_collectives_dtypes.sh — `bench collectives` with nccl-tests' short options and every --dtype
# (float, double, int32, half, bfloat16): on 3 ranks, every collective over the host backends, every
# result checked exactly (0 wrong), and the table's type column names the type.
# Usage: bench_collectives_dtypes.sh <path-to-microddp> <mpiexec> [mpiexec preflags...]
set -u
bin="$1"; shift
mpiexec="$1"; shift
failures=0
# Sum for every type; max too for the 16-bit ones (decoded, compared, re-encoded: their own path).
for d in float double int32 half bfloat16; do
  ops=(sum); case $d in half | bfloat16) ops+=(max) ;; esac
  for op in "${ops[@]}"; do
    out=$("$mpiexec" -np 3 "$@" "$bin" bench collectives -b 8 -e 128K -f 16 -n 2 -w 1 -c 1 -d "$d" -o "$op" \
            --backends mpi,ring,rd,naive --ops allreduce,reducescatter,allgather,broadcast,gather,scatter 2>&1); rc=$?
    rows=$(grep -cE "^  (allreduce|reducescatter|allgather|broadcast|gather|scatter) +[0-9]+ +[0-9]+ +$d " <<<"$out")
    if [ "$rc" = 0 ] && grep -q "^# Out of bounds values : 0 OK" <<<"$out" && [ "$rows" -gt 20 ] \
       && grep -q "dtype $d, redop $op" <<<"$out"; then
      echo "ok   -d $d -o $op: $rows rows, 0 wrong"
    else
      echo "FAIL: -d $d -o $op: exit $rc, $rows rows"; tail -5 <<<"$out"; failures=$((failures + 1))
    fi
  done
done
# -c 0: nothing checked, said so.
out=$("$mpiexec" -np 2 "$@" "$bin" bench collectives -b 8 -e 64 -n 1 -w 0 -c 0 -d half --backends ring 2>&1)
grep -q "Out of bounds values : N/A" <<<"$out" && grep -qE " N/A$" <<<"$out" && echo "ok   -c 0: #wrong N/A" \
  || { echo "FAIL: -c 0: $out"; failures=$((failures + 1)); }
[ "$failures" -eq 0 ] && echo "bench collectives dtypes: OK"
[ "$failures" -eq 0 ]
