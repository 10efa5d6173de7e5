#!/bin/bash
# job_scripts.sh — what jobs/lib/common.sh decides, without a cluster (Slurm's commands stubbed):
#   * mddp_requeue: a signal stop (75) requeues the job and says which requeue it is, up to
#     MAX_REQUEUES (default 10), then stops requeueing and exits 75; other codes pass through;
#   * mddp_launch: every srun line passes --cpus-per-task (SRUN_CPUS_PER_TASK, else the job's
#     SLURM_CPUS_PER_TASK, else 1): Slurm >= 22.05 no longer hands sbatch's value to srun;
#   * MICRODDP_SITE_ENV is sourced by mddp_init (under set -eu, even if the file is not written for
#     it), and a missing file is an error naming it;
#   * every job script is `bash -n` clean and every srun line in jobs/ carries --cpus-per-task.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
failures=0
ok() { echo "ok   $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
mkdir "$tmp/bin"
for cmd in scontrol srun; do  # stubs: record the call
  printf '#!/bin/bash\necho "%s $*" >>"%s/calls"\n' "$cmd" "$tmp" >"$tmp/bin/$cmd"
  chmod +x "$tmp/bin/$cmd"
done
printf '#!/bin/bash\nexit 0\n' >"$tmp/bin/microddp"; chmod +x "$tmp/bin/microddp"
export PATH="$tmp/bin:$PATH"
# run_common 'SHELL CODE' [VAR=VALUE...]: the code after sourcing common.sh in a job's environment.
run_common() {
  local code=$1; shift
  rm -f "$tmp/calls"
  env -u SLURM_CPUS_PER_TASK -u SRUN_CPUS_PER_TASK -u MICRODDP_SITE_ENV -u MAX_REQUEUES SLURM_JOB_ID=42 \
    MICRODDP_BIN="$tmp/bin/microddp" RESULTS_DIR="$tmp/results" "$@" \
    bash -c "set -euo pipefail; source '$repo/jobs/lib/common.sh'; $code"
}

# Requeues: the first, the tenth, then none.
out=$(run_common 'mddp_init; mddp_requeue 75' SLURM_RESTART_COUNT=0); rc=$?
[ "$rc" = 0 ] && grep -q "requeue 1 of at most 10 of job 42" <<<"$out" && grep -qx "scontrol requeue 42" "$tmp/calls" \
  && ok "requeue 1: $out" || fail "first requeue: rc $rc, '$out', calls: $(cat "$tmp/calls" 2>/dev/null)"
out=$(run_common 'mddp_init; mddp_requeue 75' SLURM_RESTART_COUNT=9); rc=$?
[ "$rc" = 0 ] && grep -q "requeue 10 of at most 10" <<<"$out" && ok "requeue 10 of 10" || fail "tenth requeue: rc $rc, '$out'"
out=$(run_common 'mddp_init; mddp_requeue 75' SLURM_RESTART_COUNT=10); rc=$?
[ "$rc" = 75 ] && grep -q "NOT requeueing: job 42 was requeued 10 times (MAX_REQUEUES=10)" <<<"$out" && [ ! -e "$tmp/calls" ] \
  && ok "after 10 requeues: exit 75, no requeue" || fail "cap: rc $rc, '$out'"
out=$(run_common 'mddp_init; mddp_requeue 75' SLURM_RESTART_COUNT=2 MAX_REQUEUES=2); rc=$?
[ "$rc" = 75 ] && ok "MAX_REQUEUES=2 honoured" || fail "MAX_REQUEUES=2: rc $rc, '$out'"
run_common 'mddp_init; mddp_requeue 1' >/dev/null; rc=$?
[ "$rc" = 1 ] && [ ! -e "$tmp/calls" ] && ok "exit 1 passes through, no requeue" || fail "exit 1: rc $rc"

# srun lines: --cpus-per-task from SRUN_CPUS_PER_TASK, else SLURM_CPUS_PER_TASK, else 1.
run_common 'mddp_init; mddp_launch 2 microddp train' SLURM_CPUS_PER_TASK=4 >/dev/null
grep -q "^srun --ntasks=2 --cpus-per-task=4 microddp train" "$tmp/calls" && ok "srun --cpus-per-task=4 from SLURM_CPUS_PER_TASK" \
  || fail "srun line: $(cat "$tmp/calls")"
run_common 'mddp_init; mddp_launch 1 microddp train' SLURM_CPUS_PER_TASK=4 SRUN_CPUS_PER_TASK=3 >/dev/null
grep -q "^srun --ntasks=1 --cpus-per-task=3 " "$tmp/calls" && ok "SRUN_CPUS_PER_TASK wins" || fail "srun line: $(cat "$tmp/calls")"
run_common 'mddp_init; mddp_launch 1 microddp train' >/dev/null
grep -q "^srun --ntasks=1 --cpus-per-task=1 " "$tmp/calls" && ok "no --cpus-per-task: 1" || fail "srun line: $(cat "$tmp/calls")"
out=$(run_common 'mddp_init; echo "exported=$SRUN_CPUS_PER_TASK"' SLURM_CPUS_PER_TASK=2)
grep -q "exported=2" <<<"$out" && ok "SRUN_CPUS_PER_TASK exported for other srun lines" || fail "SRUN_CPUS_PER_TASK: '$out'"

# The site file: sourced under set -eu even when it uses unset variables or fails a command.
printf '%s\n' 'echo "site: $UNSET_IN_THE_SITE_FILE sourced"' 'false' 'export SITE_MARK=yes' >"$tmp/site.sh"
out=$(run_common 'mddp_init; echo "mark=$SITE_MARK"' MICRODDP_SITE_ENV="$tmp/site.sh"); rc=$?
[ "$rc" = 0 ] && grep -q "site:  sourced" <<<"$out" && grep -q "mark=yes" <<<"$out" && ok "MICRODDP_SITE_ENV sourced" \
  || fail "site file: rc $rc, '$out'"
out=$(run_common 'mddp_init' MICRODDP_SITE_ENV="$tmp/missing.sh" 2>&1); rc=$?
[ "$rc" = 2 ] && grep -q "MICRODDP_SITE_ENV=$tmp/missing.sh is not a readable file" <<<"$out" && ok "a missing site file: exit 2, named" \
  || fail "missing site file: rc $rc, '$out'"

# Every script parses; every srun command of jobs/ (a line calling `srun --...`, with the two lines
# after it: its continuation) passes --cpus-per-task.
for f in "$repo"/jobs/*.sbatch "$repo"/jobs/*.sh "$repo"/jobs/lib/common.sh; do bash -n "$f" || fail "bash -n $f"; done
bare=$(for f in "$repo"/jobs/*.sbatch "$repo"/jobs/*.sh "$repo"/jobs/lib/common.sh; do
         awk -v f="$(basename "$f")" '
           { line[NR] = $0 }
           END {
             for (i = 1; i <= NR; ++i) {
               if (line[i] ~ /^[ \t]*#/ || line[i] !~ /(^|[ (=])srun --/) continue
               if ((line[i] line[i + 1] line[i + 2]) !~ /--cpus-per-task/) print f ":" i ": " line[i]
             }
           }' "$f"
       done)
[ -z "$bare" ] && ok "every srun line in jobs/ passes --cpus-per-task" || fail "srun lines without --cpus-per-task:
$bare"
[ "$failures" -eq 0 ] && echo "job scripts: OK"
[ "$failures" -eq 0 ]
