#!/usr/bin/env python3
"""figures.py — draw the course's figures from the raw outputs of docs/tools/make_figures.sh.

Not meant to be run alone: make_figures.sh runs the experiments into a work directory (with a
manifest.jsonl: one record per command, with the load average it started at) and then calls

  figures.py --work DIR --out DIR --conditions JSON [--quick]

which writes OUT/*.png, OUT/figures.md (every figure with its commands and conditions) and
OUT/data/<figure>.json (or .csv): the numbers each figure was drawn from, which the course commits
beside the figures and tests/docs/check_figure_claims.py holds every caption's claim against.
Needs Debian's python3-matplotlib (run with /usr/bin/python3).
"""
import argparse
import csv
import glob
import json
import os
import shutil
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import trace_to_png  # noqa: E402  (the timelines: the same drawing as the stand-alone tool)


def load_json(path):
    with open(path) as f:
        return json.load(f)


def load_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def median(xs):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else 0.5 * (xs[m - 1] + xs[m])


def rounded(obj, digits=6):
    """obj with every float rounded to `digits` significant digits (data files that diff readably)."""
    if isinstance(obj, float):
        return float(f"{obj:.{digits}g}")
    if isinstance(obj, dict):
        return {k: rounded(v, digits) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [rounded(v, digits) for v in obj]
    return obj


def summary_of(path):
    rows = [r for r in load_jsonl(path) if r.get("type") == "summary"]
    if not rows:
        sys.exit(f"figures.py: {path} has no summary line (unfinished run?)")
    return rows[-1]


# What the busbw figure teaches, as measured (tests/docs/check_figure_claims.py holds it against the data).
BUSBW_LESSON = (
    "Every backend is latency-bound at the small sizes: its busbw at 16 KiB is at least 4x its busbw at "
    "1 KiB (a message costs about the same whatever its size, so busbw grows with the size: a line of slope "
    "1 on these log axes). Above that the bytes start to count. The right half shows how a shared machine "
    "distorts a bandwidth curve: 4 ranks time-share 2 cores that other jobs also use (the load average at "
    "the start is printed with the command), so a collective that lasts about a scheduler slice is as much "
    "the scheduler's as the algorithm's. naive sends 2(n−1) whole buffers through rank 0 and need not fall "
    "behind here all the same: when the ranks time-share the cores, an all-reduce takes about as long as "
    "its total copies and additions, and those are the same for naive (all at the root) and the ring "
    "(spread over the ranks); the ring's advantage is parallelism, which needs a core per rank. The order "
    "of the curves at the right is this machine's, on this day, not a property of the algorithms.")


# Figures measured on the emulated cluster: they need root and network namespaces, so this script
# does not remake them; their own script does, and the chapter that shows them gives its command,
# date and load. Listed here so that figures.md names every figure of docs/img.
CLUSTER_FIGURES = [
    "## Scaling across emulated hosts (not made by this script)", "",
    "![Scaling across emulated hosts](scaling_hosts.png)", "",
    "Strong and weak scaling efficiency on 1, 2 and 4 emulated hosts, one rank per host, every link "
    "shaped: measured (solid) and the model's prediction from the 1-host run and the fit of the shaped "
    "link (dashed), by `jobs/aggregate.py`. Made as root by `tests/cluster/measure_scaling.sh "
    "build/microddp OUT` (the job scripts of a sweep on the emulated cluster) and copied from "
    "`OUT/scaling_efficiency.png`; command, date, load and table in "
    "[performance.md](../performance.md#scaling-across-emulated-hosts).", "",
    "## Hierarchical all-reduce on emulated hosts (not made by this script)", "",
    "![hier vs the flat ring on emulated hosts](hier_busbw.png)", "",
    "Bus bandwidth of the all-reduce backends on 2 emulated hosts x 2 ranks at 1 Gbit/s, with the "
    "per-link-class model's prediction for the ring and hier (left), and the ring and hier with one "
    "host's link at 100 Mbit/s (right), by `tests/cluster/plot_hier.py`. Made as root by "
    "`tests/cluster/measure_hier.sh build/microddp OUT` and copied from `OUT/hier_busbw.png`; command, "
    "date, load and tables in [hierarchical.md](../hierarchical.md#measured-on-the-emulated-cluster-2026-11-24).", ""]


class Figures:
    def __init__(self, work, out, conditions, quick):
        self.work, self.out, self.quick = work, out, quick
        self.cond = conditions
        self.runs = {r["name"]: r for r in load_jsonl(os.path.join(work, "manifest.jsonl"))}
        self.sections = []
        self.data_dir = os.path.join(out, "data")
        os.makedirs(self.data_dir, exist_ok=True)

    def path(self, name):
        return os.path.join(self.work, name)

    def save(self, fig, png):
        fig.tight_layout()
        fig.savefig(os.path.join(self.out, png), dpi=100)
        plt.close(fig)

    def write_data(self, name, obj):
        """data/NAME: what a figure was drawn from (tests/docs/check_figure_claims.py reads it)."""
        with open(os.path.join(self.data_dir, name), "w") as f:
            json.dump(rounded(obj), f, indent=1)
            f.write("\n")
        return f"data/{name}"

    def section(self, title, png, what, run_names, notes=""):
        cmds = []
        for pattern in run_names:
            for name, r in self.runs.items():
                if name == pattern or (pattern.endswith("*") and name.startswith(pattern[:-1])):
                    cmds.append(f"{r['command']}    # {r['seconds']} s, load average {r['load']:.2f} at start")
        pngs = png if isinstance(png, list) else [png]
        self.sections.append((title, pngs, what, cmds, notes))

    # 1 ----------------------------------------------------------------------------------------
    def ring_schedule(self):
        sched = load_json(self.path("ring.json"))
        n = sched["ranks"]
        # Replay the schedule on sets of contributions: what every rank holds of every block.
        held = [[{r} for _ in range(n)] for r in range(n)]
        states = [("start: every rank holds its own gradient", [[set(c) for c in row] for row in held], set())]
        for phase in ("reduce_scatter", "all_gather"):
            for s in range(n - 1):
                rows = [x for x in sched["steps"] if x["phase"] == phase and x["step"] == s]
                sent = {x["rank"]: (x["send_block"], set(held[x["rank"]][x["send_block"]])) for x in rows}
                moved = set()
                for x in rows:
                    block, data = sent[x["from"]]
                    if block != x["recv_block"]:
                        sys.exit(f"figures.py: ring schedule inconsistent: rank {x['from']} sends block {block} "
                                 f"but rank {x['rank']} receives block {x['recv_block']} ({phase} step {s})")
                    if phase == "reduce_scatter":
                        if data & held[x["rank"]][block]:
                            sys.exit(f"figures.py: ring schedule adds a contribution twice ({phase} step {s})")
                        held[x["rank"]][block] |= data
                    else:
                        held[x["rank"]][block] = set(data)
                    moved.add((x["rank"], block))
                label = ("reduce-scatter" if phase == "reduce_scatter" else "all-gather") + f", step {s}"
                states.append((label, [[set(c) for c in row] for row in held], moved))
        full = set(range(n))
        if any(held[r][b] != full for r in range(n) for b in range(n)):
            sys.exit("figures.py: after the ring's schedule some rank lacks the full sum of some block")
        # A grid, 2 rows: the start and the reduce-scatter steps above, the all-gather steps below (a
        # page-wide strip of 2n-1 panels would be unreadable). The free panel holds the key.
        cols = n
        fig, axes = plt.subplots(2, cols, figsize=(2.3 * cols, 5.2))
        flat = [ax for row in axes for ax in row]
        cmap = plt.get_cmap("Blues")
        for ax, (label, grid, moved) in zip(flat, states):
            for r in range(n):
                for b in range(n):
                    k = len(grid[r][b])
                    ax.add_patch(Rectangle((b, n - 1 - r), 1, 1, facecolor=cmap(0.15 + 0.75 * k / n),
                                           edgecolor="red" if (r, b) in moved else "white",
                                           linewidth=2.2 if (r, b) in moved else 1))
                    txt = "Σ" if k == n else "+".join(str(c) for c in sorted(grid[r][b]))
                    ax.text(b + 0.5, n - 0.5 - r, txt, ha="center", va="center", fontsize=9,
                            color="white" if k > n / 2 else "black")
            ax.set_xlim(0, n)
            ax.set_ylim(0, n)
            ax.set_xticks([b + 0.5 for b in range(n)])
            ax.set_xticklabels([f"b{b}" for b in range(n)], fontsize=8)
            ax.set_yticks([n - 0.5 - r for r in range(n)])
            ax.set_yticklabels([f"rank {r}" for r in range(n)], fontsize=8)
            ax.set_title(label, fontsize=9)
            ax.set_aspect("equal")
        for ax in flat[len(states):]:
            ax.axis("off")
        key = flat[-1]
        key.text(0.0, 0.95, "cell: whose gradients a rank\nhas summed into a block\n(Σ: all of them)\n\n"
                 "darker: more of them\n\nred edge: received\nin this step", va="top", fontsize=9,
                 transform=key.transAxes)
        fig.suptitle(f"Ring all-reduce on {n} ranks, replayed from `microddp ring-schedule`", fontsize=11)
        self.save(fig, "ring_schedule.png")
        data = self.write_data("ring_schedule.json", {
            "ranks": n, "schedule": sched["steps"],
            "panels": [{"label": label, "held": [[sorted(c) for c in row] for row in grid],
                        "received": sorted([list(m) for m in moved])} for label, grid, moved in states]})
        self.section("The ring all-reduce, step by step", "ring_schedule.png",
                     f"Each panel is the state after one step of the ring on {n} ranks: rows are ranks, columns "
                     "the blocks of the buffer, a cell lists whose gradients that rank has summed into that block "
                     "(Σ: all of them). Top row: the start and the reduce-scatter; bottom row: the all-gather. "
                     "Reduce-scatter (n−1 steps) ends with each rank owning one complete block, a different one "
                     "on every rank; all-gather (n−1 steps) copies the complete blocks around until every rank "
                     "holds every sum. The rows are the schedule the CPU "
                     "and GPU rings run (src/comm/algorithms/ring_schedule.hpp), printed by `microddp ring-schedule`; the "
                     "script replays it and fails if a rank would add a contribution twice or end without a sum. "
                     f"Data: [{data}]({data}).",
                     ["ring_schedule"])

    # 2-3 --------------------------------------------------------------------------------------
    def collectives(self):
        order = ["mpi", "ring", "rd", "naive"]
        runs = []
        for path in sorted(glob.glob(self.path("collectives_np*.json")), key=lambda p: int(p.split("np")[-1][:-5])):
            bench = load_json(path)
            rows = [{"backend": r["backend"], "bytes": r["bytes"], "busbw_gbs": r["busbw_gbs"], "time_us": r["time_us"]}
                    for r in bench["rows"] if r["op"] == "allreduce" and r["in_place"]]
            runs.append({"ranks": bench["ranks"], "rows": rows})
        fig, axes = plt.subplots(1, len(runs), figsize=(5.5 * len(runs), 4.2), sharey=True, squeeze=False)
        for ax, run in zip(axes[0], runs):
            backends = sorted({r["backend"] for r in run["rows"]}, key=lambda b: order.index(b) if b in order else 9)
            for b in backends:
                pts = sorted((r["bytes"], r["busbw_gbs"]) for r in run["rows"] if r["backend"] == b)
                ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=b, markersize=4,
                        color=f"C{order.index(b) if b in order else 5}")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("message size (bytes)")
            ax.set_title(f"{run['ranks']} ranks on one 2-core host (shared memory)", fontsize=10)
            ax.grid(alpha=0.3)
            ax.legend()
        axes[0][0].set_ylabel("bus bandwidth (GB/s, log scale)")
        fig.suptitle("all-reduce bus bandwidth per backend (median of the iterations)", fontsize=11)
        self.save(fig, "busbw.png")
        data = self.write_data("busbw.json", {"runs": runs})

        def at(run, backend, size):
            return next(r["busbw_gbs"] for r in run["rows"] if r["backend"] == backend and r["bytes"] == size)

        parts = []
        for run in runs:
            big = max(r["bytes"] for r in run["rows"])
            vals = ", ".join(f"{b} {at(run, b, big):.2f}" for b in order if any(r["backend"] == b for r in run["rows"]))
            parts.append(f"{run['ranks']} ranks at {big // 1024} KiB: {vals} GB/s")
        self.section("Bus bandwidth per backend", "busbw.png",
                     "`bench collectives`, in-place fp32 sum all-reduce, each point the maximum over ranks of the "
                     "per-iteration median. busbw = algbw × 2(n−1)/n, so a bandwidth-optimal algorithm reaches the "
                     "link rate at every n. " + "; ".join(parts) + ". " + BUSBW_LESSON
                     + f" Data: [{data}]({data}).", [r for r in self.runs if r.startswith("bench_collectives")])

        model = load_json(self.path("model_np4.json"))
        bench = load_json(self.path("collectives_np4.json"))
        rows = [r for r in bench["rows"] if r["op"] == "allreduce" and r["in_place"]]
        fit_data = {"ranks": bench["ranks"], "points": {}, "entries": []}
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
        for ax, b in zip(axes, ("ring", "mpi")):
            entry = next((e for e in model["entries"] if e["backend"] == b and e["collective"] == "all_reduce"), None)
            pts = sorted((r["bytes"], r["time_us"]) for r in rows if r["backend"] == b)
            if entry is None or not pts:
                continue
            fit_data["points"][b] = pts
            fit_data["entries"].append(entry)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "o", color="black", markersize=4, label="measured")
            xs = [pts[0][0] * (2 ** (i / 8)) for i in range(0, 1 + 8 * ((pts[-1][0] // pts[0][0]).bit_length() - 1))]
            # Both backends are modelled as a ring (src/perf/alpha_beta.hpp): α and β are per message
            # between two ranks, and the all-reduce costs 2(n-1)·α + 2(n-1)/n·S·β.
            n = bench["ranks"]

            def ring_us(alpha_us, beta_ns, x):
                return 2 * (n - 1) * alpha_us + 2 * (n - 1) / n * x * beta_ns * 1e-3

            line = [ring_us(entry["alpha_us"], entry["beta_ns_per_byte"], x) for x in xs]
            ax.plot(xs, line, "--", color="gray", label=f"one line: α {entry['alpha_us']:.1f} µs, "
                    f"β {entry['beta_ns_per_byte']:.3f} ns/B")
            regimes = entry.get("regimes", [])
            for i, g in enumerate(regimes):
                hi = regimes[i + 1]["from_bytes"] if i + 1 < len(regimes) else xs[-1]
                seg = [x for x in xs if max(g["from_bytes"], xs[0]) <= x <= hi]
                if seg:
                    ax.plot(seg, [ring_us(g["alpha_us"], g["beta_ns_per_byte"], x) for x in seg], "-", linewidth=2,
                            label=f"regime from {g['from_bytes'] / 1024:.1f} KiB: α {g['alpha_us']:.1f} µs, "
                                  f"β {g['beta_ns_per_byte']:.3f} ns/B")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("message size (bytes)")
            ax.set_ylabel("time (µs)")
            warn = entry.get("warning") or ""
            ax.set_title(f"{b}: R² {entry['r2']:.3f}, max residual {100 * entry['max_rel_residual']:.0f}%"
                         + (" (flagged)" if warn else ""), fontsize=9)
            ax.grid(alpha=0.3, which="both")
            ax.legend(fontsize=7)
        self.save(fig, "alpha_beta_fit.png")
        data = self.write_data("alpha_beta_fit.json", fit_data)
        self.section("The α-β fit and its size regimes", "alpha_beta_fit.png",
                     "The same measurements fitted by `microddp analyze --fit --bench`. Both backends are modelled as "
                     "a ring, so α (µs) and β (ns/byte) are per message between two ranks and an all-reduce of S "
                     "bytes on n ranks costs 2(n−1)·α + 2(n−1)/n·S·β. The dashed line is one (α, β) over every "
                     "size, the solid segments the piecewise fit the model actually "
                     "uses (a new regime where one line cannot follow the points: cache sizes, protocol switches "
                     "inside MPI). The title gives the one-line fit's quality; analyze flags a poor fit next to "
                     f"every prediction that depends on it. Data: [{data}]({data}).",
                     ["bench_collectives_np4", "alpha_beta_fit"])

    # 4 ----------------------------------------------------------------------------------------
    def bucket_sweep(self):
        measured = load_json(self.path("bucket_measured.json"))
        predicted = load_json(self.path("bucket_predicted.json"))

        def quart(xs, q):
            xs = sorted(xs)
            return xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))]

        m = []
        for r in sorted(measured["rows"], key=lambda r: r["bucket_mb"]):
            ps = r["per_step"]
            m.append({"bucket_mb": r["bucket_mb"], "buckets": r["ops_per_step"], "steps": len(ps["step_ms"]),
                      "step_ms": median(ps["step_ms"]), "step_ms_q1": quart(ps["step_ms"], 0.25),
                      "step_ms_q3": quart(ps["step_ms"], 0.75), "exposed_ms": median(ps["exposed_ms"]),
                      "busy_ms": median(ps["busy_ms"]), "backward_ms": median(ps["backward_ms"])})
        p = [{"bucket_mb": x["bucket_mb"], "buckets": x["collectives"], "step_ms": x["step_ms"],
              "exposed_ms": x["exposed_comm_ms"]} for x in predicted["bucket_sweep"]]
        ref = predicted["strategies"][0]  # analyze's own measured run, the profile of every prediction
        reference = {"bucket_mb": ref["bucket_mb"], "measured_step_ms": ref["measured"]["step_ms"],
                     "measured_busy_ms": ref["measured"]["comm_busy_ms"],
                     "measured_exposed_ms": ref["measured"]["exposed_comm_ms"],
                     "measured_backward_ms": ref["measured"]["backward_ms"],
                     "predicted_step_ms": ref["predicted"]["step_ms"],
                     "predicted_comm_ms": ref["predicted"]["comm_total_ms"],
                     "predicted_exposed_ms": ref["predicted"]["exposed_comm_ms"], "peer_lag_ms": ref["peer_lag_ms"]}
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
        xs = [x["bucket_mb"] for x in m]
        ax = axes[0]
        ax.errorbar(xs, [x["step_ms"] for x in m], yerr=[[x["step_ms"] - x["step_ms_q1"] for x in m],
                                                         [x["step_ms_q3"] - x["step_ms"] for x in m]],
                    fmt="o-", capsize=3, label="measured (median; bars: middle half of the steps)")
        ax.plot([x["bucket_mb"] for x in p], [x["step_ms"] for x in p], "s--", label="predicted (analyze)")
        best = min(m, key=lambda x: x["step_ms"])
        ax.annotate(f"best: {best['bucket_mb'] * 1024:g} KiB" if best["bucket_mb"] < 1 else f"best: {best['bucket_mb']:g} MiB", (best["bucket_mb"], best["step_ms"]), textcoords="offset points",
                    xytext=(0, -16), ha="center", fontsize=8)
        ax.set_ylabel("ms per step")
        ax.set_title("step time", fontsize=10)
        ax = axes[1]
        ax.plot(xs, [x["exposed_ms"] for x in m], "o-", label="exposed, measured (median)")
        ax.plot(xs, [x["busy_ms"] for x in m], "^:", label="collectives busy, measured (median)")
        ax.plot([x["bucket_mb"] for x in p], [x["exposed_ms"] for x in p], "s--", label="exposed, predicted (analyze)")
        ax.set_ylabel("ms per step")
        ax.set_ylim(bottom=0)
        ax.set_title("communication", fontsize=10)
        for ax in axes:
            ax.set_xscale("log", base=2)
            ax.set_xlabel("bucket cap (MiB); number of buckets on top")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
            top = ax.secondary_xaxis("top")
            top.set_xticks(xs)
            top.set_xticklabels([str(x["buckets"]) for x in m], fontsize=7)
        fig.suptitle(f"bucketed, width {measured['width']} depth {measured['depth']} (many small parameters), "
                     f"global batch {measured['global_batch']}, {measured['ranks']} ranks", fontsize=11)
        self.save(fig, "bucket_sweep.png")
        data = self.write_data("bucket_sweep.json", {
            "width": measured["width"], "depth": measured["depth"], "global_batch": measured["global_batch"],
            "ranks": measured["ranks"], "measured": m, "predicted": p, "reference": reference})
        first, last = m[0], m[-1]

        def cap(mb):
            return f"{mb * 1024:g} KiB" if mb < 1 else f"{mb:g} MiB"

        best_p = min(p, key=lambda x: x["step_ms"])
        self.section("Bucket size: measured against predicted", "bucket_sweep.png",
                     "Step time and communication of the bucketed strategy over the bucket cap, on a narrow, deep "
                     f"model (width {measured['width']}, depth {measured['depth']}: every weight "
                     f"{measured['width'] ** 2 * 4 // 1024} KiB) so that each cap gives another plan. Measured: "
                     "`bench ddp` (interleaved rounds), the median of every timed step; predicted: `analyze`'s "
                     "bucket sweep from its in-process α-β fit and the measured per-layer backward times. "
                     f"The step is U-shaped: {first['step_ms']:.1f} ms at {cap(first['bucket_mb'])} "
                     f"({first['buckets']} buckets), {best['step_ms']:.1f} ms at {cap(best['bucket_mb'])} "
                     f"({best['buckets']} buckets), {last['step_ms']:.1f} ms with {last['buckets']} bucket(s). "
                     "Small buckets pay a collective's latency per bucket; big ones start late and leave the last "
                     f"bucket's all-reduce exposed. Predicted best: {cap(best_p['bucket_mb'])} "
                     f"({best_p['step_ms']:.1f} ms). Measured exposed communication is above the prediction "
                     f"(at {cap(best['bucket_mb'])}: {best['exposed_ms']:.1f} ms measured against "
                     f"{next((x['exposed_ms'] for x in p if abs(x['bucket_mb'] - best['bucket_mb']) < 1e-6), float('nan')):.1f} ms "
                     "predicted): the model times each all-reduce as it ran alone, but here they run while backward "
                     f"computes on the same two cores (in analyze's own run at {cap(reference['bucket_mb'])} the "
                     f"collectives were busy {reference['measured_busy_ms']:.1f} ms per step against the "
                     f"{reference['predicted_comm_ms']:.1f} ms the model gives them), and the last bucket waits for the "
                     "slower rank (docs/bucketing.md explains the gap). "
                     f"Data: [{data}]({data}).",
                     ["bucket_measured", "bucket_predicted"])

    # 5 ----------------------------------------------------------------------------------------
    def timelines(self):
        pngs, data, lines = [], [], []
        for s in ("naive", "flat", "overlap", "bucketed"):
            trace = self.path(f"trace_{s}.json")
            png = f"timeline_{s}.png"
            trace_to_png.render(trace, os.path.join(self.out, png), step="median",
                                data=os.path.join(self.data_dir, f"timeline_{s}.json"),
                                title=f"{s}: the median step, 2 ranks (same model and settings for all four)")
            pngs.append(png)
            data.append(f"data/timeline_{s}.json")
            r0 = load_json(os.path.join(self.data_dir, f"timeline_{s}.json"))["ranks"]["0"]
            lines.append(f"{s} {r0['backward_ms']:.1f} / {r0['comm_wait_ms']:.1f} / {r0['step_ms']:.1f}")
        self.section("Timelines: naive, flat, overlap, bucketed", pngs,
                     "One step of each strategy from `train --trace` (2 ranks, the same model, batch and launcher "
                     "settings), drawn by docs/tools/trace_to_png.py: of the steps after the first, the one whose "
                     "time on rank 0 is the median. Per rank the compute row (data, forward and backward per "
                     "layer, red where the step waits for communication in finish(), loss sync, optimizer) and the "
                     "communication row (each all-reduce from the start of its execution to its completion; "
                     "triangles: launches). naive and flat start communicating after backward; overlap and "
                     "bucketed start during it. Two ranks share two cores, so communication that runs during "
                     "backward also slows backward down. Rank 0, ms (backward / blocked in finish() / step): "
                     + ", ".join(lines) + ". Data: " + ", ".join(f"[{d}]({d})" for d in data) + ".",
                     ["timeline_*"])

    # 6 ----------------------------------------------------------------------------------------
    def scaling(self):
        src = self.path("scaling/scaling_efficiency.png")
        shutil.copy(src, os.path.join(self.out, "scaling.png"))
        shutil.copy(self.path("scaling/scaling.csv"), os.path.join(self.data_dir, "scaling.csv"))
        rows = list(csv.DictReader(open(self.path("scaling/scaling.csv"))))

        def compute_ms(mode, n):
            r = next((x for x in rows if x["mode"] == mode and int(x["ranks"]) == n), None)
            return float(r["forward_ms"]) + float(r["backward_ms"]) if r else float("nan")

        ns = sorted({int(x["ranks"]) for x in rows})
        top = ns[-1]
        grow = (f"yet its forward + backward takes {compute_ms('weak', top) / compute_ms('weak', 2):.1f}x as long "
                f"at {top} ranks as at 2" if top > 2 else f"(only {top} ranks in this set)")

        def side(mode):
            r = next(x for x in rows if x["mode"] == mode and int(x["ranks"]) == top)
            return "below" if float(r["efficiency_measured"]) < float(r["efficiency_predicted"]) else "above"

        if side("strong") == side("weak"):
            where = f"at {top} ranks the measured efficiency is {side('strong')} the prediction in both modes"
        else:
            where = (f"at {top} ranks the measured efficiency is {side('strong')} the prediction in strong scaling "
                     f"and {side('weak')} it in weak scaling")
        load = self.runs.get("scaling_sweep", {}).get("load", float("nan"))
        self.section("Scaling: measured against predicted", "scaling.png",
                     "Strong and weak scaling efficiency of bucketed training from `jobs/sweep.sh local` "
                     "(the same scripts as a Slurm sweep), solid measured, dashed the model's prediction from the "
                     "smallest run (jobs/aggregate.py). All ranks run on this one 2-core host: past 2 ranks the "
                     "ranks time-slice the cores, which the model (one core per rank) does not know. It shows in "
                     f"the compute: a weak-scaling rank computes the same rows at every rank count, {grow}. "
                     f"And {where}. Below means the time slicing costs more than the model's communication "
                     "estimate; above happens when other jobs load the cores (load average "
                     f"{load:.1f} when this sweep started): the 1-rank run the prediction starts from then gets a "
                     "small share of the machine, and more ranks take a larger share from the other jobs, which "
                     "the model does not know either. For a network-bound curve see docs/cluster.md. Data: "
                     "[data/scaling.csv](data/scaling.csv).", ["scaling_model", "scaling_sweep"])

    # 7 ----------------------------------------------------------------------------------------
    # The runs of compression.md's loss table, in its order: (run name, label, extra train options).
    LOSS_MODES = [
        ("none", "none"), ("bf16", "bf16"), ("fp16", "fp16"),
        ("powersgd_r4", "powersgd rank 4, error feedback"), ("powersgd_r4_noef", "powersgd rank 4, no error feedback"),
        ("powersgd_r1", "powersgd rank 1, error feedback"), ("powersgd_r1_noef", "powersgd rank 1, no error feedback"),
    ]

    def compression(self):
        modes, tail_n = [], 50  # compression.md's table: the final step and the mean of the last 50
        for run, label in self.LOSS_MODES:
            rows = [r for r in load_jsonl(self.path(f"loss_{run}.jsonl")) if r.get("type") == "step"]
            losses = [r["loss"] for r in rows]
            tail = losses[-tail_n:]
            modes.append({"run": run, "label": label, "steps": len(losses), "loss": losses,
                          "final": losses[-1], "last50_mean": sum(tail) / len(tail),
                          "mib_per_step": rows[-1]["comm_bytes"] / 2 ** 20})
        none = modes[0]
        k = max(1, len(modes[0]["loss"]) // 20)  # running mean: one batch's loss moves by several percent

        def smooth(ys):
            return [sum(ys[max(0, i - k + 1):i + 1]) / len(ys[max(0, i - k + 1):i + 1]) for i in range(len(ys))]

        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
        panels = [("the 16-bit formats and PowerSGD rank 4", ["none", "bf16", "fp16", "powersgd_r4", "powersgd_r4_noef"]),
                  ("PowerSGD rank 1: with and without error feedback", ["none", "powersgd_r1", "powersgd_r1_noef"])]
        for ax, (title, runs) in zip(axes, panels):
            for m in modes:
                if m["run"] in runs:
                    ax.plot(range(1, m["steps"] + 1), smooth(m["loss"]), label=m["label"],
                            linewidth=1.8 if m["run"] in ("none", "powersgd_r1_noef") else 1.1)
            ax.set_yscale("log")
            ax.set_xlabel("step")
            ax.set_title(title, fontsize=10)
            ax.grid(alpha=0.3, which="both")
            ax.legend(fontsize=8)
        axes[0].set_ylabel(f"training loss (running mean of {k} steps, log scale)")
        fig.suptitle(f"loss per step by gradient compression mode, {len(none['loss'])} steps, 2 ranks", fontsize=11)
        self.save(fig, "compression_loss.png")
        loss_data = self.write_data("compression_loss.json", {"tail_steps": tail_n, "modes": modes})

        def pct(m):
            return 100.0 * (m["last50_mean"] / none["last50_mean"] - 1)

        r1, r1_noef = modes[5], modes[6]
        others = [m for m in modes[1:] if m is not r1_noef]
        bench = load_json(self.path("compression.json"))
        rows = []
        for r in bench["rows"]:
            ps = r.get("per_step", {})
            rows.append({"grad_compression": r["grad_compression"], "comm_mib_per_step": r["comm_mib_per_step"],
                         "step_ms": median(ps["step_ms"]) if ps.get("step_ms") else r["step_ms"],
                         "compress_ms": median(ps["compress_ms"]) if ps.get("compress_ms") else r["compress_ms"],
                         "step_ms_samples": ps.get("step_ms", [])})
        fig, ax = plt.subplots(figsize=(7, 4.2))
        for r in rows:
            ax.scatter(r["comm_mib_per_step"], r["step_ms"], s=50)
            ax.annotate(f"{r['grad_compression']} (encode+decode {r['compress_ms']:.1f} ms)",
                        (r["comm_mib_per_step"], r["step_ms"]), textcoords="offset points", xytext=(6, 4), fontsize=8)
        ax.set_xlabel("MiB on the wire per step (per rank)")
        ax.set_ylabel("step time (ms, median of the steps)")
        ax.set_xlim(0, 1.6 * max(r["comm_mib_per_step"] for r in rows))  # room for the labels
        ax.set_ylim(0, 1.15 * max(r["step_ms"] for r in rows))
        ax.grid(alpha=0.3)
        ax.set_title(f"bytes against step time, width {bench['width']} depth {bench['depth']}, {bench['ranks']} ranks, "
                     "shared memory", fontsize=9)
        self.save(fig, "compression_bytes.png")
        bytes_data = self.write_data("compression_bytes.json", {
            "width": bench["width"], "depth": bench["depth"], "ranks": bench["ranks"], "rows": rows})
        by = {r["grad_compression"]: r for r in rows}
        none_b = by.get("none", {"comm_mib_per_step": float("nan"), "step_ms": float("nan")})
        self.section("Compression: loss and bytes", ["compression_loss.png", "compression_bytes.png"],
                     f"Top: the training loss of each wire format over {none['steps']} steps of the default model on "
                     "the synthetic set (the runs of the loss table in docs/compression.md, which quotes these "
                     "numbers). Mean of the last 50 steps against uncompressed fp32 ("
                     f"{none['last50_mean']:.4f}): " + ", ".join(f"{m['label']} {pct(m):+.1f}%" for m in modes[1:])
                     + f". Every other mode is within 2% of fp32 (the largest gap: {max(abs(pct(m)) for m in others):.1f}%); "
                     "rank-1 PowerSGD without error feedback ends "
                     f"{pct(r1_noef):+.1f}% above it, with error feedback {pct(r1):+.1f}%: at rank 1 the approximation "
                     "drops most of each gradient, and error feedback is what puts the dropped part back (right "
                     "panel). Bottom: `bench ddp` side by side (median of each variant's steps): 16-bit formats halve "
                     f"the bytes ({by.get('fp16', none_b)['comm_mib_per_step']:.2f} of "
                     f"{none_b['comm_mib_per_step']:.2f} MiB), PowerSGD (rank 4) cuts them "
                     f"{none_b['comm_mib_per_step'] / by.get('powersgd', none_b)['comm_mib_per_step']:.0f}x; on "
                     "shared memory the bytes are cheap and the encode/decode time is not: "
                     + ", ".join(f"{r['grad_compression']} {r['step_ms']:.1f} ms" for r in rows)
                     + ". On a slow link the order flips (docs/compression.md, measured on the emulated cluster). "
                     f"Data: [{loss_data}]({loss_data}), [{bytes_data}]({bytes_data}).",
                     ["loss_*", "compression_bench"])

    # 8 ----------------------------------------------------------------------------------------
    def zero(self):
        runs = []
        for path in sorted(glob.glob(self.path("zero_n*_*.jsonl"))):
            name = os.path.basename(path)[:-6]
            n, shard = name.split("_")[1][1:], name.split("_", 2)[2]
            s = summary_of(path)
            runs.append({"ranks": int(n), "shard": shard, "memory_bytes": s["memory_bytes"],
                         "bucket_mb": s.get("config", {}).get("bucket_mb")})
        order = {"none": 0, "optimizer": 1, "gradients": 2}
        runs.sort(key=lambda x: (x["ranks"], order[x["shard"]]))
        parts = [("parameters", "parameters"), ("gradients", "gradients (backward)"),
                 ("reduced_gradients", "reduced-gradient shard"), ("comm_buffers", "gradient pool / buffers"),
                 ("optimizer_state", "Adam state"), ("activations", "activations")]
        fig, ax = plt.subplots(figsize=(max(9, 0.8 * len(runs) + 4), 4.5))
        xs = range(len(runs))
        bottom = [0.0] * len(runs)
        for key, label in parts:
            vals = [r["memory_bytes"].get(key, 0) / 2 ** 20 for r in runs]
            ax.bar(xs, vals, bottom=bottom, label=label)
            bottom = [b + v for b, v in zip(bottom, vals)]
        for x, r, b in zip(xs, runs, bottom):
            ax.text(x, b, f"{r['memory_bytes']['total'] / 2 ** 20:.0f}", ha="center", va="bottom", fontsize=7)
        ax.set_xticks(list(xs))
        ax.set_xticklabels([f"np {r['ranks']}\n{r['shard']}" for r in runs], fontsize=7)
        ax.set_ylabel("MiB per rank (measured from the allocations)")
        ax.set_ylim(0, 1.08 * max(bottom))
        # Outside the axes, right: the legend never covers a bar.
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        ax.set_title("memory per rank by --shard stage and rank count (bucketed, 4 MiB buckets)", fontsize=10)
        self.save(fig, "zero_memory.png")
        data = self.write_data("zero_memory.json", {"runs": runs})
        self.section("ZeRO: memory per rank", "zero_memory.png",
                     "What each rank holds with `--shard none` (DDP), `optimizer` (ZeRO-1) and `gradients` (ZeRO-2), "
                     "from the memory report of `train --metrics` (allocations, not estimates). Adam's state and the "
                     "reduced gradients shrink as 1/n; parameters stay whole; ZeRO-2 adds a two-bucket gradient "
                     "pool (2 x 4 MiB) instead of the full gradient buffer. The numbers on the bars are totals in MiB. "
                     f"Data: [{data}]({data}).",
                     ["zero_*"])

    def write_markdown(self):
        c = self.cond
        lines = ["# Figures", "",
                 "Every figure of the course, regenerated from real runs by one command:", "",
                 "```", "docs/tools/make_figures.sh            # from the repository root, after ./setup.sh build",
                 "```", "",
                 f"This set: {c['date']}, {c['cpu']}, {c['cores']} cores"
                 + (" — **quick mode** (tiny sizes: checks the pipeline, the numbers mean nothing)" if self.quick else "")
                 + ". Launcher: `mpirun --oversubscribe --bind-to none --mca mpi_yield_when_idle 1` (the README's "
                 "settings), CPU path, one BLAS thread per rank. Each command below is printed with its duration and "
                 "the load average when it started (a busy machine shows there first). `build/microddp` is the "
                 "binary; file names are relative to the script's scratch directory. Each figure's numbers are in "
                 "[data/](data/) (one file per figure, named after it); `tests/docs/check_figure_claims.py` holds "
                 "every caption's claim against them.", ""]
        for title, pngs, what, cmds, notes in self.sections:
            lines += [f"## {title}", ""]
            lines += [f"![{title}]({p})" for p in pngs]
            lines += ["", what, "", "```"] + cmds + ["```", ""]
            if notes:
                lines += [notes, ""]
        lines += CLUSTER_FIGURES
        with open(os.path.join(self.out, "figures.md"), "w") as f:
            f.write("\n".join(lines))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--conditions", required=True)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    figs = Figures(a.work, a.out, json.loads(a.conditions), a.quick)
    figs.ring_schedule()
    figs.collectives()
    figs.bucket_sweep()
    figs.timelines()
    figs.scaling()
    figs.compression()
    figs.zero()
    figs.write_markdown()


if __name__ == "__main__":
    main()
