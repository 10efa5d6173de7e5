"""aggregate.py RESULTS_DIR — tables and plots of a scaling study (jobs/sweep.sh).

Reads every <mode>_n<ranks>_<strategy>.jsonl (`microddp train --metrics`: the summary line) and
predicted_<mode>_<strategy>.json (`microddp analyze --json`) in RESULTS_DIR and writes:
  scaling.csv             mode, strategy, ranks, batch, measured step time/throughput/efficiency,
                          comm_pct (exposed communication + loss sync, % of the step), forward and
                          backward ms (time slicing of shared cores shows as compute growing with
                          the ranks), the model's predicted efficiency and step time, and
                          efficiency_error_pct = 100·(predicted − measured) / measured; and the
                          network's part alone: comm_exposed_ms measured and predicted, and
                          step_error_network_pct = 100·(predicted − measured exposed comm) / step,
                          the step's error if the model had been given this point's measured
                          compute (where cores are shared, compute grows with the ranks and the
                          efficiency error mixes that in; this column does not)
  phases.csv              mean step time by phase per (mode, strategy, ranks)
  scaling_efficiency.png  efficiency vs ranks, measured (solid) and predicted (dashed)
  step_phases.png         step time stacked by phase, per strategy and rank count
Efficiency is relative to the smallest rank count n0 of each (mode, strategy):
  strong: (T(n0)·n0) / (T(n)·n)      weak: T(n0) / T(n)
the prediction is normalised to the same n0. Needs matplotlib (Debian: python3-matplotlib).
"""
import csv
import glob
import json
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")  # no display on compute nodes
import matplotlib.pyplot as plt  # noqa: E402

PHASES = ["data_ms", "forward_ms", "backward_ms", "comm_exposed_ms", "loss_sync_ms", "optimizer_ms"]


def summary(path):
    last = None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                obj = json.loads(line)
                if obj.get("type") == "summary":
                    last = obj
    return last


def main(results):
    runs = {}
    for path in glob.glob(os.path.join(results, "*_n*_*.jsonl")):
        m = re.match(r"(strong|weak)_n(\d+)_(\w+)\.jsonl$", os.path.basename(path))
        s = summary(path) if m else None
        if s is None:
            print(f"skipping {path} (no summary: unfinished run?)", file=sys.stderr)
            continue
        runs[(m.group(1), m.group(3), int(m.group(2)))] = s
    if not runs:
        sys.exit(f"no finished runs in {results}")
    preds = {}
    for path in glob.glob(os.path.join(results, "predicted_*_*.json")):
        m = re.match(r"predicted_(strong|weak)_(\w+)\.json$", os.path.basename(path))
        if m:
            with open(path) as f:
                rep = json.load(f)
            preds[(m.group(1), m.group(2))] = {p["ranks"]: p for p in rep["scaling"][m.group(1)]}

    rows, phase_rows = [], []
    series = sorted({(k[0], k[1]) for k in runs})
    for mode, strategy in series:
        ns = sorted(n for (mo, st, n) in runs if (mo, st) == (mode, strategy))
        n0 = ns[0]
        t0 = runs[(mode, strategy, n0)]["mean"]["step_ms"]
        pred = preds.get((mode, strategy), {})

        def pred_eff(n):
            if n not in pred or n0 not in pred:
                return None
            if mode == "strong":
                return pred[n0]["step_ms"] * n0 / (pred[n]["step_ms"] * n)
            return pred[n0]["step_ms"] / pred[n]["step_ms"]

        for n in ns:
            s = runs[(mode, strategy, n)]
            t = s["mean"]["step_ms"]
            batch = s["config"]["global_batch"]
            eff = t0 * n0 / (t * n) if mode == "strong" else t0 / t
            pe = pred_eff(n)
            mean = s["mean"]
            comm = mean.get("comm_exposed_ms", 0.0) + mean.get("loss_sync_ms", 0.0)
            rows.append({"mode": mode, "strategy": strategy, "ranks": n, "global_batch": batch,
                         "step_ms": round(t, 4), "samples_per_s": round(batch / (t * 1e-3), 1),
                         "comm_pct": round(100.0 * comm / t, 1) if t > 0 else "",
                         "forward_ms": round(mean.get("forward_ms", 0.0), 4),
                         "backward_ms": round(mean.get("backward_ms", 0.0), 4),
                         "efficiency_measured": round(eff, 4),
                         "efficiency_predicted": "" if pe is None else round(pe, 4),
                         "efficiency_error_pct": "" if pe is None else round(100.0 * (pe - eff) / eff, 1),
                         "predicted_step_ms": round(pred[n]["step_ms"], 4) if n in pred else "",
                         "comm_exposed_ms": round(mean.get("comm_exposed_ms", 0.0), 4),
                         "predicted_comm_exposed_ms": round(pred[n]["exposed_comm_ms"], 4) if n in pred else "",
                         "step_error_network_pct": round(100.0 * (pred[n]["exposed_comm_ms"] -
                                                                  mean.get("comm_exposed_ms", 0.0)) / t, 1)
                         if n in pred and t > 0 else ""})
            phase_rows.append({"mode": mode, "strategy": strategy, "ranks": n,
                               **{p: round(s["mean"].get(p, 0.0), 4) for p in PHASES},
                               "step_ms": round(t, 4)})

    for name, data in (("scaling.csv", rows), ("phases.csv", phase_rows)):
        with open(os.path.join(results, name), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(data[0].keys()))
            w.writeheader()
            w.writerows(data)

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, mode in zip(axes, ("strong", "weak")):
        for (mo, strategy) in series:
            if mo != mode:
                continue
            r = [x for x in rows if x["mode"] == mode and x["strategy"] == strategy]
            line, = ax.plot([x["ranks"] for x in r], [x["efficiency_measured"] for x in r], "o-", label=f"{strategy} measured")
            p = [x for x in r if x["efficiency_predicted"] != ""]
            if p:
                ax.plot([x["ranks"] for x in p], [x["efficiency_predicted"] for x in p], "s--", color=line.get_color(),
                        label=f"{strategy} predicted")
        ax.set_xscale("log", base=2)
        ax.set_ylim(0, 1.1)
        ax.set_xlabel("ranks")
        ax.set_ylabel("parallel efficiency")
        ax.set_title(f"{mode} scaling")
        ax.grid(alpha=0.3)
        if ax.has_data():
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(results, "scaling_efficiency.png"), dpi=110)

    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(phase_rows) + 2), 4.5))
    labels = [f"{x['mode'][0]}/{x['strategy']}\nn={x['ranks']}" for x in phase_rows]
    bottom = [0.0] * len(phase_rows)
    for p in PHASES:
        vals = [x[p] for x in phase_rows]
        ax.bar(range(len(vals)), vals, bottom=bottom, label=p.replace("_ms", "").replace("comm_exposed", "exposed comm"))
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_ylabel("mean step time (ms)")
    ax.set_title("step time by phase (s = strong, w = weak)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(results, "step_phases.png"), dpi=110)
    for r in rows:
        print(",".join(str(v) for v in r.values()))
    print(f"wrote {results}/scaling.csv phases.csv scaling_efficiency.png step_phases.png")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
