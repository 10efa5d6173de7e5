#!/bin/bash
# cli_bad_input.sh — bad command lines end with exit code 2 and one clear message, never a hang.
# Usage: cli_bad_input.sh <path-to-microddp> <mpiexec> [mpiexec preflags...]
# Every case runs under a timeout (a hang fails the test) and is checked for: exit code 2, the
# expected text on stderr, and no crash signature (core dump / sanitizer / MPI abort banner).
set -u
bin="$1"; shift
mpiexec="$1"; shift
mpi_flags=("$@")
failures=0
cases=0

check() {  # check "<expected stderr text>" <command...>
  local expect="$1"; shift
  cases=$((cases + 1))
  local out rc
  out=$(timeout 60 "$@" 2>&1 >/dev/null); rc=$?
  if [ "$rc" -ne 2 ]; then
    echo "FAIL (exit $rc, want 2): $*"; echo "$out" | head -5 | sed 's/^/    /'; failures=$((failures + 1)); return
  fi
  if ! grep -qiF -- "$expect" <<<"$out"; then
    echo "FAIL (message lacks '$expect'): $*"; echo "$out" | head -5 | sed 's/^/    /'; failures=$((failures + 1)); return
  fi
  if grep -qE "Segmentation|core dumped|Sanitizer|terminate called|MPI_ABORT" <<<"$out"; then
    echo "FAIL (crash signature): $*"; echo "$out" | head -30 | sed 's/^/    /'; failures=$((failures + 1)); return
  fi
  echo "ok   $*"
}

t=(train --steps 1)
check "--steps"          "$bin" "${t[@]}" --steps 0
check "--steps"          "$bin" "${t[@]}" --steps -5
check "--steps"          "$bin" "${t[@]}" --steps abc
check "--steps"          "$bin" "${t[@]}" --steps 1e99
check "--global-batch"   "$bin" "${t[@]}" --global-batch 0
check "--global-batch"   "$bin" "${t[@]}" --global-batch 2147483648000
check "--width"          "$bin" "${t[@]}" --width 0
check "--width"          "$bin" "${t[@]}" --width 3.5
check "--depth"          "$bin" "${t[@]}" --depth -1
check "--in-dim"         "$bin" "${t[@]}" --in-dim 0
check "--classes"        "$bin" "${t[@]}" --classes 1
check "--lr"             "$bin" "${t[@]}" --lr -0.1
check "--lr"             "$bin" "${t[@]}" --lr nan
check "--lr"             "$bin" "${t[@]}" --lr inf
check "--momentum"       "$bin" "${t[@]}" --momentum 1.5
check "--weight-decay"   "$bin" "${t[@]}" --weight-decay -1
check "--optimizer"      "$bin" "${t[@]}" --optimizer lamb
check "unknown --strategy" "$bin" "${t[@]}" --strategy telepathy
check "unknown --comm"   "$bin" "${t[@]}" --comm carrier-pigeon
check "--threads"        "$bin" "${t[@]}" --threads -2
check "--prefetch"       "$bin" "${t[@]}" --prefetch -1
check "--prefetch"       "$bin" "${t[@]}" --prefetch 17
check "--prefetch"       "$bin" "${t[@]}" --prefetch two
check "--seed"           "$bin" "${t[@]}" --seed minus-one
check "--log-every"      "$bin" "${t[@]}" --log-every -1
check "--check-every"    "$bin" "${t[@]}" --check-every -1
check "--check-every"    "$bin" "${t[@]}" --check-every 1.5
check "--on-nan"         "$bin" "${t[@]}" --on-nan ignore
check "--clip-grad-norm" "$bin" "${t[@]}" --clip-grad-norm -1
check "--precision"      "$bin" "${t[@]}" --precision fp16
check "contradicts --precision bf16" "$bin" "${t[@]}" --tf32 --precision bf16
check "needs the GPU path" "$bin" "${t[@]}" --device cpu --precision tf32
check "contradicts --precision fp32" "$bin" "${t[@]}" --tf32 --precision fp32
check "contradicts --precision bf16" "$bin" bench compute --tf32 --precision bf16
check "contradicts --precision bf16" "$bin" bench ddp --tf32 --precision bf16
check "needs the GPU path" "$bin" bench ddp --tf32 --device cpu
check "--clip-grad-norm" "$bin" "${t[@]}" --clip-grad-norm nan
check "--clip-grad-norm" "$bin" "${t[@]}" --clip-grad-norm inf
check "MICRODDP_FAULT_NAN" env MICRODDP_FAULT_NAN=0:zero "$bin" "${t[@]}"
check "MICRODDP_FAULT_PERTURB" env MICRODDP_FAULT_PERTURB=1 "$bin" "${t[@]}"
check "--bogus"          "$bin" "${t[@]}" --bogus 3
# A value of the wrong kind is named as such; a misspelt option gets the nearest real one.
check "--width: value 'abc' is not an integer" "$bin" "${t[@]}" --width abc
check "--lr: value 'fast' is not a number" "$bin" "${t[@]}" --lr fast
check "unknown option '--widht' for 'train' (did you mean --width?)" "$bin" "${t[@]}" --widht 3
check "unknown option '--itres' for 'bench collectives' (did you mean --iters?)" "$bin" bench collectives --itres 3
check "--dtype: fp8 not in {float,double,int32,half,bfloat16}" "$bin" bench collectives -d fp8
check "--min-bytes 2 is smaller than one float (4 bytes)" "$bin" bench collectives -b 2
# An unknown command is named, with the real ones (CLI11 alone said "A subcommand is required").
check "unknown command 'frobnicate' (commands: train," "$bin" frobnicate
check "unknown command 'bench frobnicate' (bench commands: compute, collectives, ddp, links)" "$bin" bench frobnicate
check "cannot open metrics file" "$bin" "${t[@]}" --metrics /nonexistent-dir/m.jsonl
check "--global-batch"   "$bin" manual --global-batch 1 --steps 1
# The labs' seams (docs/labs): a bad choice or a combination they do not support is one message.
check "--average: foo not in" "$bin" manual --average foo --steps 1
check "--no-sync excludes --average" "$bin" manual --average lab --no-sync --steps 1
check "--strategy lab (a course lab, docs/labs) does not shard" "$bin" "${t[@]}" --strategy lab --shard optimizer
check "--strategy lab (lab 04) with --grad-compression fp16" "$bin" "${t[@]}" --strategy lab --grad-compression fp16
check "--sync-check-every" "$bin" "${t[@]}" --sync-check-every -1
check "--sync-check-every" "$bin" "${t[@]}" --sync-check-every 2.5
check "--sync-check-every" "$bin" hooks --sync-check-every x
check "debug-sync was given a disallowed" "$bin" "${t[@]}" --debug-sync=yes
check "debug-sync was given a disallowed" "$bin" bench ddp --debug-sync=1
check "--device must be cpu, cuda or auto" "$bin" "${t[@]}" --device tpu
# --device cuda where this process sees no GPU (or the build has no CUDA): one message, exit 2 on
# every rank. Where a GPU is visible, a host-only backend is refused instead.
if "$bin" train --steps 1 --width 8 --depth 1 --device auto 2>/dev/null | grep -q "compute    : cpu"; then
  check "--device cuda"  "$bin" "${t[@]}" --device cuda --width 8 --depth 1
  check "--device cuda"  "$mpiexec" -np 2 "${mpi_flags[@]}" "$bin" "${t[@]}" --device cuda --width 8 --depth 1
else
  check "runs on host memory only" "$bin" "${t[@]}" --device cuda --comm ring --width 8 --depth 1
fi
# analyze and hooks take --device and --precision as train does (the same checks, the same messages).
check "--device must be cpu, cuda or auto" "$bin" analyze --device tpu --width 8 --depth 1
check "--device must be cpu, cuda or auto" "$bin" hooks --device gpu --width 8 --depth 1
check "--precision"      "$bin" hooks --precision fp16
check "contradicts --precision bf16" "$bin" analyze --tf32 --precision bf16
check "needs the GPU path" "$bin" hooks --device cpu --precision tf32 --width 8 --depth 1
check "needs the GPU path" "$bin" analyze --precision tf32 --width 8 --depth 1 --steps 1
check "--peak-gemm-size" "$bin" analyze --peak-gemm-size 0
if "$bin" train --steps 1 --width 8 --depth 1 --device auto 2>/dev/null | grep -q "compute    : cpu"; then
  check "--device cuda"  "$bin" analyze --device cuda --width 8 --depth 1 --steps 1
  check "--device cuda"  "$mpiexec" -np 2 "${mpi_flags[@]}" "$bin" hooks --device cuda --width 8 --depth 1
else
  check "runs on host memory only" "$bin" hooks --device cuda --comm ring --width 8 --depth 1
  check "runs on host memory only" "$bin" analyze --device cuda --comm ring --width 8 --depth 1 --steps 1
fi
check "MICRODDP_FAULT_EXIT" env MICRODDP_FAULT_EXIT=1:0 "$bin" "${t[@]}" --width 8 --depth 1
check "MICRODDP_RING_SEGMENT_BYTES" env MICRODDP_RING_SEGMENT_BYTES=4k "$bin" "${t[@]}" --width 8 --depth 1
# bench collectives: unknown backends and bad overlap times before MPI starts (no MPI_ABORT banner).
check "unknown communication backend 'foo'" "$bin" bench collectives --backends foo
check "unknown communication backend 'foo'" "$bin" bench collectives --backends ring,foo+dsync
check "unknown communication backend 'foo'" "$mpiexec" -np 2 "${mpi_flags[@]}" "$bin" bench collectives --backends foo
check "--overlap-ms"     "$bin" bench collectives --overlap-ms 5,-1
# Strategies are spelt one way everywhere.
check "unknown --strategies 'telepathy'" "$bin" bench ddp --strategies naive,telepathy
check "unknown --strategies 'telepathy'" "$bin" analyze --strategies telepathy
check "unknown --scaling-strategy 'Flat'" "$bin" analyze --scaling-strategy Flat
# Commands offer only the options they use: baseline neither communicates nor accumulates.
check "--accum-steps"    "$bin" baseline --accum-steps 2
check "--comm-timeout"   "$bin" manual --comm-timeout 5
check "--comm-timeout"   "$bin" "${t[@]}" --comm-timeout nan
# Sizes in bytes take K, M, G (binary); anything else is refused, never read as 0 or truncated.
check "--min-bytes"      "$bin" bench collectives --min-bytes 1X
check "--min-bytes"      "$bin" bench collectives --min-bytes 1.5M
check "--max-bytes"      "$bin" bench collectives --max-bytes -1M
check "--max-bytes"      "$bin" bench collectives --max-bytes 2048G
check "--min-bytes 268435456 > --max-bytes 1048576" "$bin" bench collectives --min-bytes 256M --max-bytes 1M
check "--overlap-bytes"  "$bin" bench collectives --overlap-bytes 4Q
check "bad --overlap-ms entry 'abc'" "$bin" bench collectives --overlap-ms abc
check "bad --overlap-ms entry '5x'"  "$bin" bench collectives --overlap-ms 0,5x
check "bad --overlap-ms entry 'nan'" "$bin" bench collectives --overlap-ms nan
# bench links: the transfer size, the repetitions and the slow threshold.
check "--bytes"          "$bin" bench links --bytes 0
check "--bytes"          "$bin" bench links --bytes -4M
check "--bytes"          "$bin" bench links --bytes lots
check "--bytes"          "$bin" bench links --bytes 2G
check "--iters"          "$bin" bench links --iters 0
check "--warmup"         "$bin" bench links --warmup -1
check "--slow-fraction"  "$bin" bench links --slow-fraction 0
check "--slow-fraction"  "$bin" bench links --slow-fraction 1.5
check "--slow-fraction"  "$bin" bench links --slow-fraction nan
check "--bytes"          "$mpiexec" -np 2 "${mpi_flags[@]}" "$bin" bench links --bytes 0
# analyze's model and scaling options.
check "--reduce-gbps"    "$bin" analyze --link-gbps 100 --reduce-gbps -2
check "--fit-max-mb"     "$bin" analyze --fit-max-mb 0
check "--burst-credit"   "$bin" analyze --burst-credit always
check "--link-gbps"      "$bin" analyze --link-gbps -1
check "--latency-us"     "$bin" analyze --latency-us nan
check "--peak-gflops"    "$bin" analyze --peak-gflops -1
check "--mem-gbps"       "$bin" analyze --mem-gbps 0
# With MPI ranks: the verdict is reached identically on every rank, no hang.
check "--width"          "$mpiexec" -np 2 "${mpi_flags[@]}" "$bin" "${t[@]}" --width 0
check "smaller than the 3 ranks" "$mpiexec" -np 3 "${mpi_flags[@]}" "$bin" "${t[@]}" --global-batch 2 --width 8 --depth 1
check "single-process"   "$mpiexec" -np 2 "${mpi_flags[@]}" "$bin" baseline --steps 1 --width 8 --depth 1
check "clip_grad_norm"   "$mpiexec" "${mpi_flags[@]}" -np 1 "$bin" "${t[@]}" --width 8 --depth 1 --clip-grad-norm 1 : \
                                  -np 1 "$bin" "${t[@]}" --width 8 --depth 1
# --simulate-compute-ms: negative, NaN and absurd values; ranks must agree on it.
check "--simulate-compute-ms" "$bin" "${t[@]}" --simulate-compute-ms -1
check "--simulate-compute-ms" "$bin" bench ddp --simulate-compute-ms nan
check "--simulate-compute-ms" "$bin" analyze --simulate-compute-ms 1e9
check "simulate_compute_ms = 0 but rank 0 has 2" "$mpiexec" "${mpi_flags[@]}" -np 1 "$bin" "${t[@]}" --width 8 \
                                  --depth 1 --simulate-compute-ms 2 : -np 1 "$bin" "${t[@]}" --width 8 --depth 1
# Ranks started with different options (MPMD launch) are refused at start-up on every rank.
check "configuration mismatch" "$mpiexec" "${mpi_flags[@]}" -np 1 "$bin" "${t[@]}" --width 16 --depth 1 : \
                                  -np 1 "$bin" "${t[@]}" --width 8 --depth 1
check "--debug-sync is set on some ranks" "$mpiexec" "${mpi_flags[@]}" -np 1 "$bin" "${t[@]}" --width 8 --depth 1 \
                                  --debug-sync : -np 1 "$bin" "${t[@]}" --width 8 --depth 1
check "sync_check_every" "$mpiexec" "${mpi_flags[@]}" -np 1 "$bin" "${t[@]}" --width 8 --depth 1 --sync-check-every 5 : \
                                  -np 1 "$bin" "${t[@]}" --width 8 --depth 1

# An empty value is a usage error for every option (tests/app/test_command_line.cpp walks them all);
# end to end, the cases a script with an unset variable makes.
for opt in --data --resume --val-data --metrics --trace --checkpoint-dir; do
  check "$opt: an empty value" "$bin" "${t[@]}" --width 8 --depth 1 "$opt" ""
done
check "--dump-logits: an empty value" "$bin" evaluate --checkpoint x.h5 --data y.h5 --dump-logits=

# Outputs (io/output_file.hpp): never an input, never a checkpoint, never a directory, an unwritable
# place or a size that cannot fit, each refused with exit 2, one sentence and no temporary left.
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
"$bin" train --steps 2 --width 8 --depth 1 --in-dim 6 --classes 3 --global-batch 8 --checkpoint-every 2 \
  --checkpoint-dir "$d/ck" >/dev/null 2>&1 || { echo "FAIL: setup train"; failures=$((failures + 1)); }
"$bin" make-dataset "$d/data.h5" --samples 40 --in-dim 6 --classes 3 >/dev/null 2>&1 ||
  { echo "FAIL: setup make-dataset"; failures=$((failures + 1)); }
ck="$d/ck/ckpt_0000000002.h5"
cp "$ck" "$d/ck.copy"                 # what every refusal below must leave untouched
cp "$ck" "$d/other_checkpoint.h5"     # a checkpoint under any name
ln "$ck" "$d/hardlink.h5"             # the same file under a second name
check "is the input $ck"              "$bin" export "$ck" "$ck"
check "is the input $ck"              "$bin" export "$ck" "$d/ck/../ck/ckpt_0000000002.h5"
check "is the input $ck"              "$bin" export "$ck" "$d/hardlink.h5"
check "is a checkpoint"               "$bin" export "$ck" "$d/other_checkpoint.h5"
check "named like a checkpoint"       "$bin" export "$ck" "$d/ck/ckpt_0000000009.h5"
check "is a directory"                "$bin" export "$ck" "$d"
check "a directory name"              "$bin" export "$ck" "$d/"
check "its directory $d/none cannot be used" "$bin" export "$ck" "$d/none/m.h5"
check "output: an empty value"        "$bin" export "$ck" ""
check "is a directory"                "$bin" make-dataset "$d" --samples 4
check "is a checkpoint"               "$bin" make-dataset "$d/other_checkpoint.h5" --samples 4
check "is the input $d/data.h5"       "$bin" make-dataset --split --val-fraction 0.5 "$d/data.h5" "$d/data.h5" "$d/v.h5"
check "are the same file"             "$bin" make-dataset --split --val-fraction 0.5 "$d/data.h5" "$d/t.h5" "$d/./t.h5"
check "is the input $d/data.h5"       "$bin" make-dataset --from-npy "$d/data.h5" "$d/ck.copy" "$d/data.h5"
check "is the input $d/ck.copy"       "$bin" make-dataset --from-npz "$d/ck.copy" "$d/ck.copy"
check "is the input $d/data.h5"       "$bin" evaluate --checkpoint "$ck" --data "$d/data.h5" --dump-logits "$d/data.h5"
check "is the input $ck"              "$bin" evaluate --checkpoint "$ck" --data "$d/data.h5" --dump-logits "$ck"
check "is a directory"                "$bin" evaluate --checkpoint "$ck" --data "$d/data.h5" --dump-logits "$d"
# A place nobody may write: a read-only directory (root may write any mode, so /proc for root).
ro="$d/ro"; mkdir "$ro"; chmod 555 "$ro"
if touch "$ro/probe" 2>/dev/null; then rm -f "$ro/probe"; ro=/proc; fi
check "--dump-logits $ro/l.txt"       "$bin" evaluate --checkpoint "$ck" --data "$d/data.h5" --dump-logits "$ro/l.txt"
check "--dump-logits $ro/l.txt"       "$mpiexec" -np 2 "${mpi_flags[@]}" "$bin" evaluate --checkpoint "$ck" \
                                        --data "$d/data.h5" --dump-logits "$ro/l.txt"
# A full disk: --dump-logits into a 16 KiB file system (a private mount namespace: no privileges
# needed where user namespaces are allowed) fails with the system's reason, leaves the previous file
# as it was and no temporary.
"$bin" make-dataset "$d/rows.h5" --samples 3000 --in-dim 6 --classes 3 >/dev/null 2>&1
if unshare -rm true 2>/dev/null; then
  mkdir "$d/full"
  # shellcheck disable=SC2016  # expanded by the inner bash
  check "writing failed: No space left on device" unshare -rm bash -c 'mount -t tmpfs -o size=16k tmpfs "$0" &&
    echo previous >"$0/l.txt" && "$@"; rc=$?
    [ "$(ls -A "$0")" == l.txt ] && [ "$(cat "$0/l.txt")" == previous ] || { echo "left: $(ls -A "$0")" >&2; exit 9; }
    exit $rc' "$d/full" "$bin" evaluate --checkpoint "$ck" --data "$d/rows.h5" --dump-logits "$d/full/l.txt"
else
  echo "skip: --dump-logits on a full disk (unshare -rm: no user namespaces here)"
fi
# Sizes: a model that cannot fit this rank's memory is refused before anything is allocated, with
# both numbers; a synthetic set larger than the disk before it is written (in blocks of <= 64 MiB).
check "needs at least"                "$bin" "${t[@]}" --width 100000
check "but a rank can have"           "$mpiexec" -np 2 "${mpi_flags[@]}" "$bin" "${t[@]}" --width 100000
check "needs at least"                "$bin" baseline --steps 1 --width 100000
check "for its 2 replicas"            "$bin" manual --steps 1 --width 100000
check "needs at least"                "$bin" bench ddp --width 100000
check "but a rank can have"           bash -c "ulimit -v 4000000; exec \"\$0\" \"\$@\"" "$bin" "${t[@]}" \
                                        --width 4096 --depth 64
check "would take 8.00 EiB"           "$bin" make-dataset "$d/s.h5" --in-dim 16777216 --samples 1099511627776
check "would take 516 TiB"            "$bin" make-dataset "$d/s.h5" --samples 1099511627776
cmp -s "$ck" "$d/ck.copy" && echo "ok   the checkpoint is unchanged" ||
  { echo "FAIL: the checkpoint changed"; failures=$((failures + 1)); }
"$bin" inspect "$ck" 2>&1 | grep -q "^# VALID" && echo "ok   the checkpoint is VALID" ||
  { echo "FAIL: the checkpoint is not VALID"; failures=$((failures + 1)); }
left=$(find "$d" /proc -maxdepth 2 -name "*.tmp" 2>/dev/null)
[ -z "$left" ] && echo "ok   no temporary left" || { echo "FAIL: temporaries left: $left"; failures=$((failures + 1)); }

echo "$((cases - failures)) passed, $failures failed"
[ "$failures" -eq 0 ]
