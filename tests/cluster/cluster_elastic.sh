#!/bin/bash
# cluster_elastic.sh MICRODDP MPIEXEC [MPIEXEC_FLAGS...] — jobs/elastic_run.sh on the emulated
# cluster (2 hosts x 2 ranks):
#   host lost: once the step-100 checkpoint exists, host 2 crashes (`cluster.sh fail`: every process on it is
#     killed, its link goes down). The wrapper must print one restart line naming the lost host and
#     "world size 4 -> 2", restart on host 1 from the newest checkpoint and finish (exit 0). Then:
#     no checkpoint written before the crash is lost or damaged (`microddp inspect`), the restart
#     loaded the newest one, and the final parameters equal those of an uninterrupted 2-rank run
#     continued from a copy of that same checkpoint (checksums).
#   fewer hosts than --min-hosts answer at the start: exit 1, nothing launched.
#   bad usage: exit 2 and one message.
#   restarts exhausted: rank 3 exits with code 3 in every attempt (MICRODDP_FAULT_EXIT); both hosts
#     still answer, so the one restart allowed keeps world size 4, fails the same way, and the
#     wrapper exits 1 saying the restarts are exhausted.
set -euo pipefail
bin=$(readlink -f "$1"); shift
mpiexec=("$@")
repo=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=cluster_lib.sh
source "$(dirname "$0")/cluster_lib.sh"
cluster_test_begin elastic
C=$CLUSTER
N=$MDDP_CLUSTER
t0=$SECONDS
fail() { echo "FAIL: $*"; [ ! -s "$WORK/elastic.out" ] || sed 's/^/    /' "$WORK/elastic.out" | tail -60; exit 1; }
checksum() { sed -n 's/.*parameter checksum \([0-9a-f]*\).*/\1/p' "$1" | tail -1; }
export MICRODDP_BIN=$bin RESULTS_DIR=$WORK/results

"$C" up 2
"$C" hostfile 2 >"$WORK/hostfile"
# About 1-5 ms per step here: the crash comes after the step-100 checkpoint, with 900 steps to go.
T=(--width 64 --depth 4 --global-batch 64 --threads 1 --steps 1000 --log-every 500 --keep 0 --comm-timeout 60)

# ---- bad usage: one message, exit 2, nothing started ----------------------------------------------
for bad in "--max-restarts x" "--checkpoint-every 0" "--bogus" "-- --resume auto" "-- --checkpoint-dir x" "--hostfile /nonexistent"; do
  rc=0
  # shellcheck disable=SC2086
  "$repo/jobs/elastic_run.sh" --hostfile "$WORK/hostfile" $bad >"$WORK/bad.out" 2>&1 || rc=$?
  [ "$rc" = 2 ] && [ "$(grep -c "elastic_run.sh: error:" "$WORK/bad.out")" = 1 ] \
    || fail "elastic_run.sh $bad: exit $rc, expected 2 with one error line: $(cat "$WORK/bad.out")"
done
rc=0; LAUNCHER=mpirun "$repo/jobs/elastic_run.sh" -- --steps 1 >"$WORK/bad.out" 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -q "hostfile is required" "$WORK/bad.out" || fail "mpirun without --hostfile: exit $rc: $(cat "$WORK/bad.out")"
echo "ok   bad usage: exit 2 with one message"

# ---- host lost ---------------------------------------------------------------------------------
ck=$WORK/ckpt
"$C" run "$repo/jobs/elastic_run.sh" --hostfile "$WORK/hostfile" --checkpoint-dir "$ck" --checkpoint-every 50 \
  --max-restarts 2 --probe-timeout 5 -- "${T[@]}" >"$WORK/elastic.out" 2>&1 &
wrapper=$!
for _ in $(seq 600); do [ -e "$ck/ckpt_0000000100.h5" ] || ! kill -0 "$wrapper" 2>/dev/null && break; sleep 0.1; done
[ -e "$ck/ckpt_0000000100.h5" ] || fail "no step-100 checkpoint within 60 s"
grep -q "elastic: restart" "$WORK/elastic.out" && fail "a restart before the crash"
"$C" fail h2
(cd "$ck" && ls ckpt_??????????.h5) >"$WORK/before"      # what existed when the host crashed
rc=0; wait "$wrapper" || rc=$?
[ "$rc" = 0 ] || fail "elastic_run.sh exited $rc after the host was lost"
grep -q "^# elastic: training finished after 1 restart" "$WORK/elastic.out" || fail "no 'training finished after 1 restart'"
[ "$(grep -c "^# elastic: restart " "$WORK/elastic.out")" = 1 ] || fail "expected exactly one restart line"
line=$(grep "^# elastic: restart " "$WORK/elastic.out")
grep -q "lost host(s): $N-h2 (probes took" <<<"$line" || fail "the restart line does not name the lost host $N-h2: $line"
grep -q "world size 4 -> 2" <<<"$line" || fail "the restart line does not say 'world size 4 -> 2': $line"
[ "$(tail -1 "$WORK/before")" ] || fail "no checkpoint before the crash"
for f in $(cat "$WORK/before"); do
  "$bin" inspect "$ck/$f" >/dev/null 2>&1 || fail "checkpoint $f, written before the crash, is lost or damaged"
done
named=$(sed -n 's/.*resuming from \(ckpt_[0-9]*\.h5\) .*/\1/p' <<<"$line")
loaded=$(sed -n '/^# elastic: restart /,$ s/^# resume: loaded .*\/\(ckpt_[0-9]*\.h5\) (step [0-9]*)$/\1/p' "$WORK/elastic.out")
[ -n "$loaded" ] && [ "$loaded" = "$named" ] || fail "the restart loaded '$loaded', the wrapper named '$named'"
# The newest checkpoint when the crash happened, or one the surviving rank 0 finished writing just after.
[[ ! $loaded < $(tail -1 "$WORK/before") ]] || fail "the restart loaded $loaded, older than $(tail -1 "$WORK/before")"
got=$(checksum "$WORK/elastic.out")
mkdir "$WORK/ref"; cp "$ck/$loaded" "$WORK/ref/"
"${mpiexec[@]}" -np 2 "$bin" train "${T[@]}" --resume "$WORK/ref/$loaded" --checkpoint-dir "$WORK/ref/out" >"$WORK/ref.out" 2>&1 \
  || fail "the reference run from $loaded failed: $(tail -5 "$WORK/ref.out")"
ref=$(checksum "$WORK/ref.out")
[ -n "$got" ] && [ "$got" = "$ref" ] || fail "elastic run ends with '$got'; 2 ranks continued from $loaded end with '$ref'"
echo "ok   host lost: $(sed 's/^# elastic: //' <<<"$line")"
echo "ok   host lost: $(wc -l <"$WORK/before") checkpoints from before the crash intact; resumed from $loaded;" \
     "final checksum $got = uninterrupted 2-rank run from the same checkpoint"
[ -z "$(ip netns pids "$N-h1")" ] || fail "processes left on $N-h1: $(ip netns pids "$N-h1" | tr '\n' ' ')"
# With h2 still down, --min-hosts 2 cannot be met: exit 1 at the start, nothing launched.
rc=0; "$C" run "$repo/jobs/elastic_run.sh" --hostfile "$WORK/hostfile" --checkpoint-dir "$WORK/ckpt3" --min-hosts 2 \
  --probe-timeout 5 -- "${T[@]}" >"$WORK/min.out" 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -q "left out at the start: $N-h2" "$WORK/min.out" && grep -q "fewer than --min-hosts 2" "$WORK/min.out" \
  || fail "--min-hosts 2 with one host down: exit $rc: $(grep elastic: "$WORK/min.out")"
grep -q "^# launch" "$WORK/min.out" && fail "--min-hosts 2 with one host down launched training"
echo "ok   --min-hosts 2 with $N-h2 down: $(grep '^# elastic: error' "$WORK/min.out" | sed 's/^# elastic: //'), exit 1"
"$C" recover h2

# ---- restarts exhausted ------------------------------------------------------------------------
rc=0
MICRODDP_FAULT_EXIT=3:300:3 MPIRUN_FLAGS="--oversubscribe --bind-to none -x MICRODDP_FAULT_EXIT" \
  "$C" run "$repo/jobs/elastic_run.sh" --hostfile "$WORK/hostfile" --checkpoint-dir "$WORK/ckpt2" \
  --checkpoint-every 10 --max-restarts 1 --probe-timeout 5 -- "${T[@]}" >"$WORK/elastic.out" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "restarts exhausted: exit $rc, expected 1"
[ "$(grep -c "^# elastic: restart " "$WORK/elastic.out")" = 1 ] || fail "restarts exhausted: expected exactly one restart line"
line=$(grep "^# elastic: restart " "$WORK/elastic.out")
grep -q "rank 3 ($N-h2) exited with code 3" <<<"$line" || fail "the restart line does not name rank 3 on $N-h2 and exit code 3: $line"
grep -q "lost host(s): none (probes took .* world size 4 -> 4" <<<"$line" || fail "with both hosts alive the restart should keep world size 4: $line"
grep -q "^# elastic: error: attempt 2 failed .*restarts exhausted (--max-restarts 1)" "$WORK/elastic.out" \
  || fail "no 'restarts exhausted' message"
echo "ok   restarts exhausted: $(sed 's/^# elastic: //' <<<"$line")"
echo "ok   restarts exhausted: $(grep '^# elastic: error' "$WORK/elastic.out" | sed 's/^# elastic: //'), exit 1"
echo "cluster elastic: OK in $((SECONDS - t0)) s"
