#!/usr/bin/env python3
"""trace_to_png.py — render a microddp Chrome trace (--trace FILE.json) as a timeline PNG.

One row pair per rank: "compute" (backward layers as bars, forward/optimizer/comm_wait) and
"comm" (one bar per gradient collective, from when it started executing to its completion;
a tick at each launch). Only the events of one step are drawn (default: the last step).

Docs-tool dependency (not needed to build or test microddp): Debian `python3-matplotlib`
(run with /usr/bin/python3).

  /usr/bin/python3 docs/tools/trace_to_png.py trace.json docs/img/timeline.png [--step N] [--title T]
"""
import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {
    "forward": "#9ecae1", "layer_forward": "#6baed6", "backward": "#fdd0a2", "layer_backward": "#fd8d3c",
    "comm_wait": "#de2d26", "optimizer": "#74c476", "loss_sync": "#bcbddc", "data": "#d9d9d9",
    "collective": "#756bb1",
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("png")
    ap.add_argument("--step", type=int, default=None, help="step to draw (default: last)")
    ap.add_argument("--title", default=None)
    a = ap.parse_args()
    evs = json.load(open(a.trace))["traceEvents"]
    steps = [e["args"]["step"] for e in evs if e.get("ph") != "M" and "args" in e and "step" in e["args"]]
    step = a.step if a.step is not None else max(steps)
    evs = [e for e in evs if e.get("ph") != "M" and e.get("args", {}).get("step") == step]
    ranks = sorted({e["pid"] for e in evs})
    t0 = min(e["ts"] for e in evs)
    fig, ax = plt.subplots(figsize=(12, 1.0 + 1.1 * len(ranks)))
    yt, yl = [], []
    for i, r in enumerate(ranks):
        y_comp = (len(ranks) - 1 - i) * 2.5 + 1.2
        y_comm = y_comp - 1.0
        yt += [y_comp, y_comm]
        yl += [f"rank {r} compute", f"rank {r} comm"]
        for e in evs:
            if e["pid"] != r:
                continue
            cat = e.get("cat", "")
            x = (e["ts"] - t0) / 1000.0
            if e["ph"] == "X":
                w = e["dur"] / 1000.0
                if cat == "collective":
                    ax.barh(y_comm, w, left=x, height=0.7, color=COLORS["collective"], edgecolor="black", linewidth=0.4)
                elif cat in ("step",):
                    continue
                elif cat in ("forward", "backward"):
                    ax.barh(y_comp, w, left=x, height=0.8, color=COLORS[cat], alpha=0.5)
                else:
                    h = 0.55 if cat.startswith("layer_") else 0.8
                    ax.barh(y_comp, w, left=x, height=h, color=COLORS.get(cat, "#cccccc"), edgecolor="black", linewidth=0.3)
            elif cat == "launch":
                ax.plot([x, x], [y_comm - 0.45, y_comm + 0.45], color="black", linewidth=0.8)
    handles = [plt.Rectangle((0, 0), 1, 1, color=COLORS[k]) for k in
               ("layer_forward", "layer_backward", "comm_wait", "optimizer", "collective")]
    ax.legend(handles, ["forward (per layer)", "backward (per layer)", "blocked in finish()", "optimizer",
                        "all-reduce (bucket/param)"], loc="upper right", fontsize=8, ncol=5)
    ax.set_yticks(yt)
    ax.set_yticklabels(yl)
    ax.set_xlabel("ms from the start of the step (ticks on comm rows: launches)")
    ax.set_ylim(-0.3, len(ranks) * 2.5 + 0.6)
    ax.set_title(a.title or f"{a.trace}: step {step}")
    fig.tight_layout()
    fig.savefig(a.png, dpi=110)


if __name__ == "__main__":
    main()
