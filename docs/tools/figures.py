#!/usr/bin/env python3
"""figures.py — draw the course's figures from the raw outputs of docs/tools/make_figures.sh.

Not meant to be run alone: make_figures.sh runs the experiments into a work directory (with a
manifest.jsonl: one record per command, with the load average it started at) and then calls

  figures.py --work DIR --out DIR --conditions JSON [--quick]

which writes OUT/*.png and OUT/figures.md (every figure with its commands and conditions).
Needs Debian's python3-matplotlib (run with /usr/bin/python3).
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, Rectangle  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def load_json(path):
    with open(path) as f:
        return json.load(f)


def load_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def summary_of(path):
    rows = [r for r in load_jsonl(path) if r.get("type") == "summary"]
    if not rows:
        sys.exit(f"figures.py: {path} has no summary line (unfinished run?)")
    return rows[-1]


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

    def path(self, name):
        return os.path.join(self.work, name)

    def save(self, fig, png):
        fig.tight_layout()
        fig.savefig(os.path.join(self.out, png), dpi=100)
        plt.close(fig)

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
        cols = len(states)
        fig, axes = plt.subplots(1, cols, figsize=(2.25 * cols, 2.9))
        cmap = plt.get_cmap("Blues")
        for ax, (label, grid, moved) in zip(axes, states):
            for r in range(n):
                for b in range(n):
                    k = len(grid[r][b])
                    ax.add_patch(Rectangle((b, n - 1 - r), 1, 1, facecolor=cmap(0.15 + 0.75 * k / n),
                                           edgecolor="red" if (r, b) in moved else "white",
                                           linewidth=2.2 if (r, b) in moved else 1))
                    txt = "Σ" if k == n else "+".join(str(c) for c in sorted(grid[r][b]))
                    ax.text(b + 0.5, n - 0.5 - r, txt, ha="center", va="center", fontsize=8,
                            color="white" if k > n / 2 else "black")
            ax.set_xlim(0, n)
            ax.set_ylim(0, n)
            ax.set_xticks([b + 0.5 for b in range(n)])
            ax.set_xticklabels([f"b{b}" for b in range(n)], fontsize=7)
            ax.set_yticks([n - 0.5 - r for r in range(n)])
            ax.set_yticklabels([f"rank {r}" for r in range(n)], fontsize=7)
            ax.set_title(label, fontsize=8)
            ax.set_aspect("equal")
        fig.suptitle(f"Ring all-reduce on {n} ranks, replayed from `microddp ring-schedule` "
                     "(cell: whose gradients a rank holds for a block; red: received this step)", fontsize=9)
        self.save(fig, "ring_schedule.png")
        self.section("The ring all-reduce, step by step", "ring_schedule.png",
                     f"Each panel is the state after one step of the ring on {n} ranks: rows are ranks, columns "
                     "the blocks of the buffer, a cell lists whose gradients that rank has summed into that block "
                     "(Σ: all of them). Reduce-scatter (n−1 steps) ends with each rank owning one complete block; "
                     "all-gather (n−1 steps) copies the complete blocks around. The rows are the schedule the CPU "
                     "and GPU rings run (src/comm/algorithms/ring_schedule.hpp), printed by `microddp ring-schedule`; the "
                     "script replays it and fails if a rank would add a contribution twice or end without a sum.",
                     ["ring_schedule"])

    # 2-3 --------------------------------------------------------------------------------------
    def collectives(self):
        bench = load_json(self.path("collectives.json"))
        rows = [r for r in bench["rows"] if r["op"] == "allreduce" and r["in_place"]]
        backends = sorted({r["backend"] for r in rows}, key=lambda b: ["mpi", "ring", "rd", "naive"].index(b)
                          if b in ("mpi", "ring", "rd", "naive") else 9)
        fig, ax = plt.subplots(figsize=(7, 4.2))
        for b in backends:
            pts = sorted((r["bytes"], r["busbw_gbs"]) for r in rows if r["backend"] == b)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=b, markersize=4)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("bus bandwidth (GB/s)")
        ax.set_title(f"all-reduce bus bandwidth, {bench['ranks']} ranks on one host (shared memory)", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend()
        self.save(fig, "busbw.png")
        big = max(r["bytes"] for r in rows)
        at_big = {r["backend"]: r["busbw_gbs"] for r in rows if r["bytes"] == big}
        self.section("Bus bandwidth per backend", "busbw.png",
                     f"`bench collectives` at {bench['ranks']} ranks, in-place fp32 sum all-reduce, each point the "
                     "maximum over ranks of the per-iteration median. busbw = algbw × 2(n−1)/n, so a bandwidth-"
                     "optimal algorithm reaches the link rate at every n. At the largest size "
                     f"({big // 1024} KiB): " + ", ".join(f"{b} {v:.2f} GB/s" for b, v in at_big.items()) + ". "
                     "Four ranks share two cores here, so small messages pay for scheduling; the shape (latency-"
                     "bound left, bandwidth-bound right; naive falling behind as the root does all the work) is the "
                     "lesson, not the absolute numbers.", ["bench_collectives"])

        model = load_json(self.path("model_np4.json"))
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
        for ax, b in zip(axes, ("ring", "mpi")):
            entry = next((e for e in model["entries"] if e["backend"] == b and e["collective"] == "all_reduce"), None)
            pts = sorted((r["bytes"], r["time_us"]) for r in rows if r["backend"] == b)
            if entry is None or not pts:
                continue
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
        self.section("The α-β fit and its size regimes", "alpha_beta_fit.png",
                     "The same measurements fitted by `microddp analyze --fit --bench`. Both backends are modelled as "
                     "a ring, so α (µs) and β (ns/byte) are per message between two ranks and an all-reduce of S "
                     "bytes on n ranks costs 2(n−1)·α + 2(n−1)/n·S·β. The dashed line is one (α, β) over every "
                     "size, the solid segments the piecewise fit the model actually "
                     "uses (a new regime where one line cannot follow the points: cache sizes, protocol switches "
                     "inside MPI). The title gives the one-line fit's quality; analyze flags a poor fit next to "
                     "every prediction that depends on it.", ["bench_collectives", "alpha_beta_fit"])

    # 4 ----------------------------------------------------------------------------------------
    def bucket_sweep(self):
        measured = load_json(self.path("bucket_measured.json"))
        predicted = load_json(self.path("bucket_predicted.json"))
        fig, ax = plt.subplots(figsize=(7, 4.2))
        m = sorted((r["bucket_mb"], r["step_ms"], r["exposed_ms"]) for r in measured["rows"])
        p = sorted((r["bucket_mb"], r["step_ms"], r["exposed_comm_ms"]) for r in predicted["bucket_sweep"])
        ax.plot([x[0] for x in m], [x[1] for x in m], "o-", label="step, measured (bench ddp)")
        ax.plot([x[0] for x in p], [x[1] for x in p], "s--", label="step, predicted (analyze)")
        ax.plot([x[0] for x in m], [x[2] for x in m], "o-", alpha=0.6, label="exposed comm, measured")
        ax.plot([x[0] for x in p], [x[2] for x in p], "s--", alpha=0.6, label="exposed comm, predicted")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("bucket cap (MiB)")
        ax.set_ylabel("ms per step")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        ax.set_title(f"bucketed, width {measured['width']} depth {measured['depth']}, {measured['ranks']} ranks",
                     fontsize=10)
        self.save(fig, "bucket_sweep.png")
        best_m = min(m, key=lambda x: x[1])
        best_p = predicted.get("best_bucket", {})
        self.section("Bucket size: measured against predicted", "bucket_sweep.png",
                     "Step time and exposed communication of the bucketed strategy over the bucket cap. Measured: "
                     "`bench ddp` (interleaved rounds, means of rank 0's steps); predicted: `analyze`'s bucket sweep "
                     "from its in-process α-β fit and the measured per-layer backward times. Small buckets pay α "
                     "per bucket; big ones start late and leave the last bucket's all-reduce exposed. "
                     f"Measured best: {best_m[0]:g} MiB ({best_m[1]:.1f} ms); predicted best: "
                     f"{best_p.get('bucket_mb', float('nan')):.2f} MiB ({best_p.get('step_ms', float('nan')):.1f} ms).",
                     ["bucket_measured", "bucket_predicted"])

    # 5 ----------------------------------------------------------------------------------------
    def timelines(self):
        pngs = []
        for s in ("naive", "flat", "overlap", "bucketed"):
            trace = self.path(f"trace_{s}.json")
            png = f"timeline_{s}.png"
            subprocess.run([sys.executable, os.path.join(HERE, "trace_to_png.py"), trace, os.path.join(self.out, png),
                            "--title", f"{s}: last of 4 steps, 2 ranks (same model and settings for all four)"],
                           check=True)
            pngs.append(png)
        self.section("Timelines: naive, flat, overlap, bucketed", pngs,
                     "One step of each strategy from `train --trace` (2 ranks, the same model, batch and launcher "
                     "settings), drawn by docs/tools/trace_to_png.py: per rank the compute row (forward and "
                     "backward per layer, red where the step waits for communication) and the communication row "
                     "(each all-reduce from the start of its execution to its completion; ticks: launches). naive "
                     "and flat start communicating after backward; overlap and bucketed start during it. Two ranks "
                     "share two cores, so communication that runs during backward also slows backward down.",
                     ["timeline_*"])

    # 6 ----------------------------------------------------------------------------------------
    def scaling(self):
        src = self.path("scaling/scaling_efficiency.png")
        shutil.copy(src, os.path.join(self.out, "scaling.png"))
        rows = open(self.path("scaling/scaling.csv")).read().strip().splitlines()
        self.section("Scaling: measured against predicted", "scaling.png",
                     "Strong and weak scaling efficiency of bucketed training from `jobs/sweep.sh local` "
                     "(the same scripts as a Slurm sweep), solid measured, dashed the model's prediction from the "
                     "smallest run (jobs/aggregate.py). All ranks run on this one 2-core host: past 2 ranks the "
                     "ranks time-slice the cores, which the model (one core per rank) does not know — the gap at 4 "
                     "ranks is that, not the network. For a network-bound curve see docs/cluster.md.\n\n```\n"
                     + "\n".join(rows) + "\n```", ["scaling_model", "scaling_sweep"])

    # 7 ----------------------------------------------------------------------------------------
    def compression(self):
        fig, ax = plt.subplots(figsize=(7, 4.2))
        finals = {}
        for m in ("none", "bf16", "fp16", "powersgd", "powersgd-noef"):
            rows = [r for r in load_jsonl(self.path(f"loss_{m}.jsonl")) if r.get("type") == "step"]
            k = max(1, len(rows) // 50)
            xs = [r["step"] for r in rows]
            ys = [sum(r2["loss"] for r2 in rows[max(0, i - k + 1):i + 1]) / len(rows[max(0, i - k + 1):i + 1])
                  for i in range(len(rows))]
            label = {"powersgd": "powersgd r1, error feedback", "powersgd-noef": "powersgd r1, no error feedback"}.get(m, m)
            ax.plot(xs, ys, label=label, linewidth=1.2)
            tail = rows[-max(1, len(rows) // 10):]
            finals[label] = sum(r["loss"] for r in tail) / len(tail)
        ax.set_xlabel("step")
        ax.set_ylabel(f"training loss (running mean of {k} steps)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        ax.set_title("loss per step by gradient compression mode, 2 ranks", fontsize=10)
        self.save(fig, "compression_loss.png")

        bench = load_json(self.path("compression.json"))
        fig, ax = plt.subplots(figsize=(7, 4.2))
        for r in bench["rows"]:
            ax.scatter(r["comm_mib_per_step"], r["step_ms"], s=50)
            ax.annotate(f"{r['grad_compression']} (encode+decode {r['compress_ms']:.1f} ms)",
                        (r["comm_mib_per_step"], r["step_ms"]), textcoords="offset points", xytext=(6, 4), fontsize=8)
        ax.set_xlabel("MiB on the wire per step (per rank)")
        ax.set_ylabel("step time (ms)")
        ax.set_xlim(0, 1.6 * max(r["comm_mib_per_step"] for r in bench["rows"]))  # room for the labels
        ax.set_ylim(0, 1.15 * max(r["step_ms"] for r in bench["rows"]))
        ax.grid(alpha=0.3)
        ax.set_title(f"bytes against step time, width {bench['width']} depth {bench['depth']}, {bench['ranks']} ranks, "
                     "shared memory", fontsize=9)
        self.save(fig, "compression_bytes.png")
        fastest = min(bench["rows"], key=lambda r: r["step_ms"])
        none_ms = next((r["step_ms"] for r in bench["rows"] if r["grad_compression"] == "none"), float("nan"))
        self.section("Compression: loss and bytes", ["compression_loss.png", "compression_bytes.png"],
                     "Top: the training loss of each wire format on the synthetic set (mean of the last 10% of steps: "
                     + ", ".join(f"{k} {v:.4f}" for k, v in finals.items()) + "). PowerSGD at rank 1 is the "
                     "aggressive setting where error feedback visibly matters. Bottom: `bench ddp` side by side: "
                     "16-bit formats halve the bytes, PowerSGD cuts them by an order of magnitude; on shared memory "
                     "the bytes are cheap and the encode/decode time is not: fastest here "
                     f"{fastest['grad_compression']} ({fastest['step_ms']:.1f} ms against none's {none_ms:.1f} ms). "
                     "On a slow link the order flips (docs/compression.md, measured on the emulated cluster).",
                     ["loss_*", "compression_bench"])

    # 8 ----------------------------------------------------------------------------------------
    def zero(self):
        runs = []
        for path in sorted(glob.glob(self.path("zero_n*_*.jsonl"))):
            name = os.path.basename(path)[:-6]
            n, shard = name.split("_")[1][1:], name.split("_", 2)[2]
            runs.append((int(n), shard, summary_of(path)["memory_bytes"]))
        order = {"none": 0, "optimizer": 1, "gradients": 2}
        runs.sort(key=lambda x: (x[0], order[x[1]]))
        parts = [("parameters", "parameters"), ("gradients", "gradients (backward)"),
                 ("reduced_gradients", "reduced-gradient shard"), ("comm_buffers", "gradient pool / buffers"),
                 ("optimizer_state", "Adam state"), ("activations", "activations")]
        fig, ax = plt.subplots(figsize=(max(7, 0.8 * len(runs) + 2), 4.5))
        xs = range(len(runs))
        bottom = [0.0] * len(runs)
        for key, label in parts:
            vals = [r[2].get(key, 0) / 2 ** 20 for r in runs]
            ax.bar(xs, vals, bottom=bottom, label=label)
            bottom = [b + v for b, v in zip(bottom, vals)]
        for x, r, b in zip(xs, runs, bottom):
            ax.text(x, b, f"{r[2]['total'] / 2 ** 20:.0f}", ha="center", va="bottom", fontsize=7)
        ax.set_xticks(list(xs))
        ax.set_xticklabels([f"np {r[0]}\n{r[1]}" for r in runs], fontsize=7)
        ax.set_ylabel("MiB per rank (measured from the allocations)")
        ax.legend(fontsize=7, ncol=2)
        ax.set_title("memory per rank by --shard stage and rank count (bucketed, 4 MiB buckets)", fontsize=10)
        self.save(fig, "zero_memory.png")
        self.section("ZeRO: memory per rank", "zero_memory.png",
                     "What each rank holds with `--shard none` (DDP), `optimizer` (ZeRO-1) and `gradients` (ZeRO-2), "
                     "from the memory report of `train --metrics` (allocations, not estimates). Adam's state and the "
                     "reduced gradients shrink as 1/n; parameters stay whole; ZeRO-2 adds a two-bucket gradient "
                     "pool instead of the full gradient buffer. The numbers on the bars are totals in MiB.",
                     ["zero_*"])

    def write_markdown(self):
        c = self.cond
        lines = ["# Figures", "",
                 "Every figure of the course, regenerated from real runs by one command:", "",
                 "```", "docs/tools/make_figures.sh            # from the repository root, after ./setup.sh build",
                 "```", "",
                 f"This set: {c['date']}, {c['cpu']}, {c['cores']} cores, commit {c['commit']}"
                 + (" — **quick mode** (tiny sizes: checks the pipeline, the numbers mean nothing)" if self.quick else "")
                 + ". Launcher: `mpirun --oversubscribe --bind-to none --mca mpi_yield_when_idle 1` (the README's "
                 "settings), CPU path, one BLAS thread per rank. Each command below is printed with its duration and "
                 "the load average when it started (a busy machine shows there first). `build/microddp` is the "
                 "binary; file names are relative to the script's scratch directory.", ""]
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
