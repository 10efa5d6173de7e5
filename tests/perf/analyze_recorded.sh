#!/bin/bash
# analyze_recorded.sh MICRODDP MPIEXEC [MPI FLAGS...] — `microddp analyze` on recorded runs.
#   1. a fresh 2-rank run of every strategy, saved as a run record (--save-run) with the model fit
#   2. analyze of that record (1 process): same numbers as the fresh report; for every strategy the
#      phases add up to the step time (untimed rest within 5% of the step or 0.2 ms: timer calls
#      and the gaps between events are all that is not inside a phase)
#   3. train --metrics --layer-events on 2 ranks (the summary holds the per-layer backward times),
#      then analyze --metrics with the saved model and --scaling-strategy flat (the local reduction
#      rate for --link-gbps measured)
#   4. malformed records (a mistyped field, a layer id outside the model, ranks 0, a negative peer
#      lag): exit 2 with a message naming the problem, no abort
set -euo pipefail
bin=$1; mpiexec=$2; shift 2
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cd "$work"
small=(--width 128 --depth 3 --global-batch 64 --threads 1)
"$mpiexec" -np 2 "$@" "$bin" analyze "${small[@]}" --steps 3 --warmup 1 --fit-max-mb 1 \
  --save-run run.json --fit-out model.json --json fresh.json >fresh.txt
grep -q "Predicted vs measured" fresh.txt
"$mpiexec" -np 1 "$@" "$bin" analyze --run run.json --model model.json --json recorded.json >recorded.txt
"$mpiexec" -np 2 "$@" "$bin" train "${small[@]}" --steps 4 --strategy bucketed --metrics m.jsonl --layer-events >train.txt
"$mpiexec" -np 1 "$@" "$bin" analyze --metrics m.jsonl --model model.json --link-gbps 100 --latency-us 5 \
  --scaling-strategy flat --json metrics.json >metrics.txt
python3 - <<'PY'
import json
fresh, rec, met = (json.load(open(f)) for f in ("fresh.json", "recorded.json", "metrics.json"))
def close(a, b, tol=1e-9): return abs(a - b) <= tol * max(1.0, abs(a), abs(b))
assert [s["strategy"] for s in rec["strategies"]] == ["naive", "flat", "overlap", "bucketed"], rec["strategies"]
for a, b in zip(fresh["strategies"], rec["strategies"]):
    assert close(a["measured"]["step_ms"], b["measured"]["step_ms"]), (a, b)
    assert close(a["predicted"]["step_ms"], b["predicted"]["step_ms"]), (a, b)
for rep in (rec, met):
    for s in rep["strategies"]:
        m = s["measured"]
        parts = m["data_ms"] + m["forward_ms"] + m["backward_ms"] + m["exposed_comm_ms"] + m["loss_sync_ms"] + m["optimizer_ms"]
        assert abs(parts - m["phase_sum_ms"]) < 1e-9
        gap = m["step_ms"] - parts
        assert -1e-6 <= gap <= max(0.05 * m["step_ms"], 0.2), (s["strategy"], m["step_ms"], parts)
        assert 0 <= m["overlap_pct"] <= 100 + 1e-9 and m["comm_overhead_pct"] >= 0
        assert s["predicted"]["step_ms"] > 0
    assert rep["bottleneck"]["verdict"] in ("compute-bound", "communication-bound", "memory-bound")
    assert [p["ranks"] for p in rep["scaling"]["strong"]] == [2 ** k for k in range(11)]
    assert abs(rep["scaling"]["weak"][0]["efficiency"] - 1) < 1e-12
    sweep = rep["bucket_sweep"]  # the model's bucket sweep, whose minimum is the best bucket
    assert sweep and min(p["step_ms"] for p in sweep) >= rep["best_bucket"]["step_ms"] * 0.999, sweep
    assert any(p["bucket_mb"] == rep["best_bucket"]["bucket_mb"] for p in sweep)
assert met["strategies"][0]["strategy"] == "bucketed" and met["config"]["ranks"] == 2
assert met["scaling"]["strategy"] == "flat", met["scaling"]["strategy"]
# --link-gbps without --reduce-gbps: the local reduction rate is measured on this node (> 0).
assert met["scaling"]["reduce_gbytes_s"] > 0 and "local reduction" in met["scaling"]["network"], met["scaling"]
summary = [json.loads(l) for l in open("m.jsonl") if '"summary"' in l][-1]
assert summary["layer_ids"] == [3, 2, 1, 0], summary.get("layer_ids")
assert len(summary["layer_backward_ms"]) == 4 and all(t > 0 for t in summary["layer_backward_ms"]), summary
assert summary["config"]["ranks_per_node"] == 2 and summary["config"]["cores_per_node"] >= 1
# The straggler lag is measured (>= 0 by definition) in the summary and in every saved strategy run.
assert summary["peer_lag_ms"] >= 0, summary.get("peer_lag_ms")
assert all(r["peer_lag_ms"] >= 0 for r in json.load(open("run.json"))["runs"])
assert all(s["peer_lag_ms"] >= 0 for s in rec["strategies"]) and met["strategies"][0]["peer_lag_ms"] == summary["peer_lag_ms"]
# Malformed copies for step 4.
def mutate(name, f):
    lines = [json.loads(l) for l in open("m.jsonl")]
    f(lines[-1])
    open(name, "w").write("\n".join(json.dumps(l) for l in lines) + "\n")
mutate("bad_type.jsonl", lambda j: j.__setitem__("layer_ids", "x"))
mutate("bad_layer.jsonl", lambda j: j.__setitem__("layer_ids", [3, 2, 1, 9]))
mutate("bad_ranks.jsonl", lambda j: j["config"].__setitem__("ranks", 0))
mutate("bad_lag.jsonl", lambda j: j.__setitem__("peer_lag_ms", -1.0))
print("analyze on recorded runs: consistent")
PY
for c in "bad_type.jsonl:malformed line" "bad_layer.jsonl:does not fit a model of depth 3" "bad_ranks.jsonl:ranks 0 is out of range" "bad_lag.jsonl:peer_lag_ms -1"; do
  f=${c%%:*}; want=${c#*:}
  set +e; out=$("$bin" analyze --metrics "$f" --link-gbps 100 2>&1); rc=$?; set -e
  if [ "$rc" -ne 2 ] || ! grep -qF -- "$want" <<<"$out" || grep -q "MPI_ABORT" <<<"$out"; then
    echo "FAIL: analyze --metrics $f: exit $rc, want 2 and '$want'"; echo "$out" | head -3; exit 1
  fi
  echo "ok   analyze --metrics $f: $want"
done
