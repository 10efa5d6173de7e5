#!/usr/bin/env python3
"""trace_to_png.py — render a microddp Chrome trace (--trace FILE.json) as a timeline PNG.

One row pair per rank: "compute" (data, forward and backward per layer, waiting for communication,
loss sync, optimizer) and "comm" (one bar per gradient collective, from when it started executing
to its completion; a black triangle above the row at each launch). Only the events of one step are
drawn: the last (default), a given one (--step N), or --step median: of the steps after the first
(a warm-up), the one whose duration on rank 0 is the median, so the picture is a typical step and
not the luckiest or unluckiest. The legend lists exactly the colours drawn.

--data FILE.json writes what was drawn: the events of the step (ms from its start) and, per rank,
the numbers the course quotes (backward, waiting in finish(), whole step, when backward ended and
when the first all-reduce was launched and started).

Docs-tool dependency (not needed to build or test microddp): Debian `python3-matplotlib`
(run with /usr/bin/python3).

  /usr/bin/python3 docs/tools/trace_to_png.py trace.json docs/img/timeline.png [--step N|median]
      [--title T] [--data timeline.json]
"""
import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

COLORS = {
    "data": "#d9d9d9", "forward": "#9ecae1", "layer_forward": "#6baed6", "backward": "#fdd0a2",
    "layer_backward": "#fd8d3c", "comm_wait": "#de2d26", "loss_sync": "#bcbddc", "optimizer": "#74c476",
    "compress": "#e7ba52", "collective": "#756bb1",
}
# Legend text per category, in legend order. forward/backward (the whole phase) are drawn pale behind
# their per-layer bars and share the layer entries' wording.
LABELS = [
    ("data", "data (batch to the model)"), ("layer_forward", "forward (per layer; pale: whole phase)"),
    ("layer_backward", "backward (per layer; pale: whole phase)"), ("compress", "gradient compression"),
    ("comm_wait", "blocked in finish()"), ("loss_sync", "loss sync (all-reduce of the loss)"),
    ("optimizer", "optimizer"), ("collective", "gradient all-reduce (running)"),
]
PHASE_OF_LAYER = {"forward": "layer_forward", "backward": "layer_backward"}


def pick_step(evs, want):
    steps = sorted({e["args"]["step"] for e in evs if e.get("ph") != "M" and "step" in e.get("args", {})})
    if not steps:
        raise SystemExit("trace_to_png.py: the trace has no events with a step")
    if want is None:
        return steps[-1]
    if want != "median":
        return int(want)
    rank0 = min(e["pid"] for e in evs if e.get("ph") != "M")
    dur = {e["args"]["step"]: e["dur"] for e in evs if e.get("cat") == "step" and e["pid"] == rank0}
    cands = sorted((d, s) for s, d in dur.items() if s != steps[0]) or sorted((d, s) for s, d in dur.items())
    return cands[(len(cands) - 1) // 2][1]


def render(trace, png, step=None, title=None, data=None):
    """Draw one step of `trace` into `png`; with `data`, write what was drawn there (see the top)."""
    all_evs = json.load(open(trace))["traceEvents"]
    step = pick_step(all_evs, step)
    evs = [e for e in all_evs if e.get("ph") != "M" and e.get("args", {}).get("step") == step]
    ranks = sorted({e["pid"] for e in evs})
    steps_of = {e["pid"]: e for e in evs if e.get("cat") == "step"}
    t0 = min(e["ts"] for e in evs)
    fig, ax = plt.subplots(figsize=(12, 1.5 + 1.1 * len(ranks)))
    yt, yl, drawn, rows, per_rank = [], [], set(), [], {}
    launch_marker = False
    for i, r in enumerate(ranks):
        y_comp = (len(ranks) - 1 - i) * 2.5 + 1.2
        y_comm = y_comp - 1.0
        yt += [y_comp, y_comm]
        yl += [f"rank {r} compute", f"rank {r} comm"]
        mine = [e for e in evs if e["pid"] == r]
        # Pale whole phases first, so the per-layer bars sit on top of them.
        mine.sort(key=lambda e: (e.get("cat") not in PHASE_OF_LAYER, e["ts"]))
        for e in mine:
            cat = e.get("cat", "")
            x = (e["ts"] - t0) / 1000.0
            if e["ph"] == "X":
                w = e["dur"] / 1000.0
                if cat == "step":
                    continue
                if cat == "collective":
                    # White edges separate back-to-back all-reduces without looking like launch marks.
                    ax.barh(y_comm, w, left=x, height=0.6, color=COLORS[cat], edgecolor="white", linewidth=0.6)
                    drawn.add(cat)
                elif cat in PHASE_OF_LAYER:
                    ax.barh(y_comp, w, left=x, height=0.8, color=COLORS[cat], alpha=0.5)
                    drawn.add(PHASE_OF_LAYER[cat])
                else:
                    if cat not in COLORS:
                        raise SystemExit(f"trace_to_png.py: no colour for event category '{cat}'")
                    h = 0.55 if cat.startswith("layer_") else 0.8
                    ax.barh(y_comp, w, left=x, height=h, color=COLORS[cat], edgecolor="black", linewidth=0.3)
                    drawn.add(cat)
                rows.append({"rank": r, "cat": cat, "name": e.get("name", ""), "start_ms": round(x, 4),
                             "dur_ms": round(w, 4)})
            elif cat == "launch":
                ax.plot([x], [y_comm + 0.45], marker="v", color="black", markersize=5, linestyle="none")
                launch_marker = True
                rows.append({"rank": r, "cat": "launch", "name": e.get("name", ""), "start_ms": round(x, 4),
                             "dur_ms": 0.0})

        def span(cat, r=r):
            xs = [(x["start_ms"], x["start_ms"] + x["dur_ms"]) for x in rows if x["rank"] == r and x["cat"] == cat]
            return (min(s for s, _ in xs), max(e for _, e in xs)) if xs else None

        bwd, coll, launch = span("backward"), span("collective"), span("launch")
        per_rank[str(r)] = {
            "step_ms": round(steps_of[r]["dur"] / 1000.0, 4) if r in steps_of else None,
            "backward_ms": round(bwd[1] - bwd[0], 4) if bwd else None,
            "backward_end_ms": round(bwd[1], 4) if bwd else None,
            "comm_wait_ms": round(sum(x["dur_ms"] for x in rows if x["rank"] == r and x["cat"] == "comm_wait"), 4),
            "first_launch_ms": launch[0] if launch else None,
            "first_collective_start_ms": coll[0] if coll else None,
            "last_collective_end_ms": coll[1] if coll else None,
            "collectives": sum(1 for x in rows if x["rank"] == r and x["cat"] == "collective"),
        }
    legend = [(k, t) for k, t in LABELS if k in drawn]
    handles = [plt.Rectangle((0, 0), 1, 1, color=COLORS[k]) for k, _ in legend]
    texts = [t for _, t in legend]
    if launch_marker:
        handles.append(Line2D([], [], marker="v", color="black", linestyle="none", markersize=6))
        texts.append("launch of an all-reduce")
    # Below the axes: the legend never covers a bar.
    ax.legend(handles, texts, loc="upper center", bbox_to_anchor=(0.5, -0.28), fontsize=8, ncol=5, frameon=False)
    ax.set_yticks(yt)
    ax.set_yticklabels(yl)
    ax.set_xlabel("ms from the start of the step")
    ax.set_ylim(-0.3, len(ranks) * 2.5 - 0.1)
    ax.set_title(title or f"{trace}: step {step}")
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)
    if data:
        with open(data, "w") as f:
            json.dump({"trace_step": step, "legend": [k for k, _ in legend] + (["launch"] if launch_marker else []),
                       "drawn": sorted(drawn) + (["launch"] if launch_marker else []), "ranks": per_rank,
                       "events": rows}, f, indent=1)
            f.write("\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("png")
    ap.add_argument("--step", default=None, help="step to draw: N, 'median' (default: last)")
    ap.add_argument("--title", default=None)
    ap.add_argument("--data", default=None, help="write the drawn step's events and per-rank numbers here")
    a = ap.parse_args()
    render(a.trace, a.png, a.step, a.title, a.data)


if __name__ == "__main__":
    main()
