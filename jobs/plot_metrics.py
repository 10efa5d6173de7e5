#!/usr/bin/env python3
"""plot_metrics.py — the curves of `microddp train --metrics FILE.jsonl` runs, as one PNG.

  jobs/plot_metrics.py run.jsonl -o curves.png
  jobs/plot_metrics.py --compare constant.jsonl cosine.jsonl --labels constant,cosine -o both.png
  jobs/plot_metrics.py run.jsonl -o curves.png --data-out curves.json   # the numbers behind it

Six panels: training loss (every step, and the mean of each epoch when the run has epochs),
validation loss, validation accuracy (the best evaluation marked when the run kept a best model),
learning rate, gradient norm (before clipping), step time. With --compare, every run is one line in
each panel. --data-out writes the series the figure was drawn from (tests check those, not pixels).

Reading a metrics file (run/metrics_log.hpp has the format): a file may hold several runs one after
the other; a {"type":"start"} record begins a run, and this script draws the last run of each file.
A {"type":"resume","step":S} record continues the run after checkpoint step S: the step and
validation records before it with a step > S were computed again after it, so they are dropped
(the later records win). Files written before those records existed read as one run.
Needs Debian's python3-matplotlib (run with /usr/bin/python3 where another python3 comes first).
"""
import argparse
import json
import math
import sys


def read_runs(path):
    """The runs of one metrics file, each a list of its records (resumes applied)."""
    runs = [[]]
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:  # e.g. the half line a killed run left
                print(f"plot_metrics.py: {path}:{number}: not JSON, skipped ({e})", file=sys.stderr)
                continue
            kind = rec.get("type") if isinstance(rec, dict) else None
            if kind == "start":
                runs.append([rec])
            elif kind == "resume":
                step = rec.get("step", 0)
                runs[-1] = [r for r in runs[-1]
                            if r.get("type") not in ("step", "validation") or r.get("step", 0) <= step]
                runs[-1].append(rec)
            else:
                runs[-1].append(rec)
    runs = [r for r in runs if any(x.get("type") == "step" for x in r)]
    if not runs:
        sys.exit(f"plot_metrics.py: {path}: no step records (is it a `train --metrics` file?)")
    return runs


def number(v):
    return float("nan") if v is None else float(v)


def series(records, label):
    """The numbers one run's panels show."""
    steps = sorted((r for r in records if r.get("type") == "step"), key=lambda r: r["step"])
    vals = sorted((r for r in records if r.get("type") == "validation"), key=lambda r: r["step"])
    s = {
        "label": label,
        "step": [r["step"] for r in steps],
        "loss": [number(r.get("loss")) for r in steps],
        "lr": [number(r.get("lr")) for r in steps],
        "grad_norm": [number(r.get("grad_norm")) for r in steps],
        "step_ms": [number(r.get("step_ms")) for r in steps],
        "val_step": [r["step"] for r in vals],
        "val_loss": [number(r.get("loss")) for r in vals],
        "val_accuracy": [number(r.get("accuracy")) for r in vals],
    }
    # Per-epoch mean loss: the mean over the epoch's steps, drawn at its last step.
    epochs = {}
    for r in steps:
        if "epoch" in r:
            epochs.setdefault(r["epoch"], []).append(r)
    s["epoch"] = sorted(epochs)
    s["epoch_end_step"] = [max(r["step"] for r in epochs[e]) for e in s["epoch"]]
    s["epoch_mean_loss"] = [sum(number(r["loss"]) for r in epochs[e]) / len(epochs[e]) for e in s["epoch"]]
    best = [r for r in vals if r.get("best")]
    s["best_step"] = best[-1]["step"] if best else None
    summary = [r for r in records if r.get("type") == "summary"]
    s["summary_best"] = summary[-1].get("best") if summary else None
    return s


def finite(xs):
    return [x for x in xs if not math.isnan(x)]


def draw(all_series, out, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(15, 8))
    panels = [
        (axes[0][0], "training loss", "loss"),
        (axes[0][1], "validation loss", "val_loss"),
        (axes[0][2], "validation accuracy", "val_accuracy"),
        (axes[1][0], "learning rate", "lr"),
        (axes[1][1], "gradient norm (before clipping)", "grad_norm"),
        (axes[1][2], "step time (ms)", "step_ms"),
    ]
    for i, s in enumerate(all_series):
        color = f"C{i}"
        for ax, name, key in panels:
            xs = s["val_step"] if key.startswith("val_") else s["step"]
            ys = s[key]
            if not xs or not finite(ys):
                continue
            if key == "loss" and s["epoch"]:
                ax.plot(xs, ys, color=color, alpha=0.25, linewidth=0.6)
                ax.plot(s["epoch_end_step"], s["epoch_mean_loss"], "o-", color=color, markersize=3,
                        label=f"{s['label']} (epoch mean)")
            else:
                ax.plot(xs, ys, "o-" if key.startswith("val_") else "-", color=color, markersize=3,
                        linewidth=1.0 if key.startswith("val_") else 0.8, label=s["label"])
            if key.startswith("val_") and s["best_step"] is not None:
                j = s["val_step"].index(s["best_step"])
                ax.plot([s["best_step"]], [ys[j]], "*", color=color, markersize=12)
    for ax, name, key in panels:
        ax.set_title(name)
        ax.set_xlabel("step")
        ax.grid(True, alpha=0.3)
        if key in ("loss", "grad_norm") and all(min(finite(s[key]) or [1]) > 0 for s in all_series):
            ax.set_yscale("log")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("files", nargs="+", help="train --metrics JSONL files")
    p.add_argument("-o", "--out", required=True, help="the PNG to write")
    p.add_argument("--compare", action="store_true", help="several runs on one figure (one line each)")
    p.add_argument("--labels", help="comma-separated labels of the runs (default: the file names)")
    p.add_argument("--title", default="", help="the figure's title")
    p.add_argument("--data-out", help="also write the series behind the figure to this JSON file")
    a = p.parse_args()
    if len(a.files) > 1 and not a.compare:
        sys.exit("plot_metrics.py: several files: give --compare to draw them on one figure")
    labels = a.labels.split(",") if a.labels else a.files
    if len(labels) != len(a.files):
        sys.exit(f"plot_metrics.py: {len(labels)} labels for {len(a.files)} files")
    all_series = [series(read_runs(f)[-1], label) for f, label in zip(a.files, labels)]
    if a.data_out:
        with open(a.data_out, "w") as f:
            json.dump({"runs": all_series}, f, indent=1, allow_nan=True)
    draw(all_series, a.out, a.title or ", ".join(labels))
    print(f"# wrote {a.out}" + (f" and {a.data_out}" if a.data_out else ""))


if __name__ == "__main__":
    main()
