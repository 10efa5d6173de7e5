#!/usr/bin/env python3
"""check_figure_claims.py — every claim a figure's caption makes holds in the data the figure was
drawn from.

docs/tools/make_figures.sh draws each figure of the course and writes the numbers it drew beside it
(docs/img/data/<figure>.json or .csv, committed). Each check below holds one caption claim against
those numbers, independently of the drawing code (it recomputes what it needs: the ring is replayed
from the schedule, orders and ratios from the measured rows), and also requires the caption's
wording of the claim to be in docs/img/figures.md, so a caption and its check cannot drift apart.
Numbers the chapters quote from the same runs (ddp.md's timeline line, compression.md's loss
table, bucketing.md's gap between measured and predicted) must equal the data as printed.

  tests/docs/check_figure_claims.py [--root REPO] [--img DIR] [--schema-only]

--img: the figures folder (default REPO/docs/img). --schema-only: only check that every data file
is there and has what the checks read (the quick-mode figures of app.figures_quick, whose numbers
mean nothing); no claim or chapter number is held against it. Exit 0 when every claim holds, 1 with
one line per broken claim otherwise, 2 on bad usage. Reads a few small JSON files: well under a
second. Plain python3, no third-party modules.
"""
import argparse
import csv
import json
import os
import re
import sys

CHECKS = []


def claim(figure, phrase, data):
    """Register a check: `phrase` must appear in figures.md (the caption's wording of the claim);
    the function gets the loaded data files and returns a list of what does not hold."""
    def register(fn):
        CHECKS.append((figure, phrase, data, fn))
        return fn
    return register


def median(xs):
    xs = sorted(xs)
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else 0.5 * (xs[m - 1] + xs[m])


# ---- the ring all-reduce, step by step --------------------------------------------------------------
@claim("ring_schedule.png", "ends with each rank owning one complete block, a different one on every rank",
       ["ring_schedule.json"])
def ring_reduce_scatter(d):
    """Replay the schedule (independently of figures.py) on sets of contributions."""
    r = d["ring_schedule.json"]
    n, steps = r["ranks"], r["schedule"]
    held = [[{k} for _ in range(n)] for k in range(n)]
    bad = []
    for s in range(n - 1):
        rows = [x for x in steps if x["phase"] == "reduce_scatter" and x["step"] == s]
        sent = {x["rank"]: (x["send_block"], set(held[x["rank"]][x["send_block"]])) for x in rows}
        for x in rows:
            block, data = sent[x["from"]]
            if block != x["recv_block"]:
                bad.append(f"reduce-scatter step {s}: rank {x['from']} sends block {block}, rank {x['rank']} "
                           f"expects {x['recv_block']}")
            if data & held[x["rank"]][block]:
                bad.append(f"reduce-scatter step {s}: rank {x['rank']} adds a contribution twice to block {block}")
            held[x["rank"]][block] |= data
    owned = [[b for b in range(n) if held[k][b] == set(range(n))] for k in range(n)]
    if any(len(o) != 1 for o in owned) or len({o[0] for o in owned if o}) != n:
        bad.append(f"after reduce-scatter the complete blocks per rank are {owned}, not one distinct block each")
    # The figure's panel after the last reduce-scatter step shows exactly this state.
    panel = r["panels"][n - 1]["held"]
    if panel != [[sorted(c) for c in row] for row in held]:
        bad.append("the drawn panel after reduce-scatter differs from the replayed schedule")
    return bad


@claim("ring_schedule.png", "copies the complete blocks around until every rank holds every sum",
       ["ring_schedule.json"])
def ring_all_gather(d):
    r = d["ring_schedule.json"]
    n = r["ranks"]
    if len(r["panels"]) != 2 * n - 1:
        return [f"{len(r['panels'])} panels, expected the start and 2(n-1) = {2 * (n - 1)} steps"]
    last = r["panels"][-1]["held"]
    if any(sorted(c) != list(range(n)) for row in last for c in row):
        return ["after all-gather some rank lacks the complete sum of some block"]
    # All-gather only copies complete sums: each cell keeps its reduce-scatter state or becomes Σ.
    after_rs = r["panels"][n - 1]["held"]
    bad = []
    for p in r["panels"][n:]:
        for k in range(n):
            for b in range(n):
                if p["held"][k][b] not in (after_rs[k][b], list(range(n))):
                    bad.append(f"{p['label']}: rank {k} block {b} holds {p['held'][k][b]}, a partial sum")
    return bad


# ---- bus bandwidth -----------------------------------------------------------------------------------
@claim("busbw.png", "its busbw at 16 KiB is at least 4x its busbw at 1 KiB", ["busbw.json"])
def busbw_latency_bound(d):
    """16x the bytes at about the same cost per message: ideally 16x the busbw; 4x leaves room for
    the part of the time that does grow with the size."""
    bad = []
    for run in d["busbw.json"]["runs"]:
        for b in sorted({x["backend"] for x in run["rows"]}):
            at = {x["bytes"]: x["busbw_gbs"] for x in run["rows"] if x["backend"] == b}
            if not at[16384] >= 4 * at[1024]:
                bad.append(f"{run['ranks']} ranks, {b}: {at[16384]:.4f} GB/s at 16 KiB, not 4x the "
                           f"{at[1024]:.4f} GB/s at 1 KiB")
    return bad


# ---- bucket sweep --------------------------------------------------------------------------------------
@claim("bucket_sweep.png", "The step is U-shaped", ["bucket_sweep.json"])
def bucket_u_shape(d):
    """The fastest cap (median step) is neither the smallest nor the largest, and both ends are at
    least 25% slower than it: well outside the middle half of the steps on a shared machine."""
    m = d["bucket_sweep.json"]["measured"]
    best = min(range(len(m)), key=lambda i: m[i]["step_ms"])
    bad = []
    if best in (0, len(m) - 1):
        bad.append(f"the fastest cap is {m[best]['bucket_mb']} MiB, an end of the sweep")
    for end in (m[0], m[-1]):
        if end["step_ms"] < 1.25 * m[best]["step_ms"]:
            bad.append(f"{end['bucket_mb']} MiB: {end['step_ms']:.1f} ms, not 25% above the best "
                       f"{m[best]['step_ms']:.1f} ms")
    if len({x["buckets"] for x in m}) != len(m):
        bad.append("two caps give the same number of buckets (the same plan)")
    return bad


@claim("bucket_sweep.png", "Measured exposed communication is above the prediction", ["bucket_sweep.json"])
def bucket_gap(d):
    """At the best cap the measured exposed time exceeds the predicted one, and in analyze's own run
    the collectives were busy longer than the model's time for them (the explanation given)."""
    b = d["bucket_sweep.json"]
    best = min(b["measured"], key=lambda x: x["step_ms"])
    pred = next((x for x in b["predicted"] if abs(x["bucket_mb"] - best["bucket_mb"]) < 1e-6), None)
    bad = []
    if pred is None:
        bad.append(f"analyze predicted no step at the best cap {best['bucket_mb']} MiB")
    elif not best["exposed_ms"] > pred["exposed_ms"]:
        bad.append(f"at {best['bucket_mb']} MiB measured exposed {best['exposed_ms']:.1f} ms is not above the "
                   f"predicted {pred['exposed_ms']:.1f} ms")
    r = b["reference"]
    if not r["measured_busy_ms"] > r["predicted_comm_ms"]:
        bad.append(f"analyze's run: busy {r['measured_busy_ms']:.1f} ms, not above the predicted "
                   f"{r['predicted_comm_ms']:.1f} ms")
    return bad


# ---- the alpha-beta fit --------------------------------------------------------------------------------
@claim("alpha_beta_fit.png", "the solid segments the piecewise fit the model actually uses (a new regime where "
       "one line cannot follow the points", ["alpha_beta_fit.json"])
def fit_regimes_follow_points(d):
    """Recompute both fits' residuals at the measured points: the piecewise fit's largest relative
    residual is smaller than the one line's, for each backend drawn."""
    f = d["alpha_beta_fit.json"]
    n = f["ranks"]
    bad = []

    def ring_us(alpha_us, beta_ns, x):
        return 2 * (n - 1) * alpha_us + 2 * (n - 1) / n * x * beta_ns * 1e-3

    for e in f["entries"]:
        pts = f["points"][e["backend"]]
        regs = sorted(e["regimes"], key=lambda g: g["from_bytes"])

        def piece(x):
            g = [g for g in regs if g["from_bytes"] <= x][-1] if regs else e
            return ring_us(g["alpha_us"], g["beta_ns_per_byte"], x)

        line = max(abs(ring_us(e["alpha_us"], e["beta_ns_per_byte"], x) - t) / t for x, t in pts)
        pw = max(abs(piece(x) - t) / t for x, t in pts)
        if not pw < line:
            bad.append(f"{e['backend']}: piecewise max residual {100 * pw:.0f}% is not below the one line's "
                       f"{100 * line:.0f}%")
    return bad


# ---- timelines ---------------------------------------------------------------------------------------
TIMELINES = ["timeline_naive.json", "timeline_flat.json", "timeline_overlap.json", "timeline_bucketed.json"]


@claim("timeline_naive.png", "naive and flat start communicating after backward", TIMELINES)
def timelines_after_backward(d):
    bad = []
    for s in ("naive", "flat"):
        for rank, r in d[f"timeline_{s}.json"]["ranks"].items():
            if r["first_collective_start_ms"] < r["backward_end_ms"]:
                bad.append(f"{s} rank {rank}: first all-reduce starts at {r['first_collective_start_ms']:.2f} ms, "
                           f"before backward ends ({r['backward_end_ms']:.2f} ms)")
    return bad


@claim("timeline_overlap.png", "overlap and bucketed start during it", TIMELINES)
def timelines_during_backward(d):
    """During: the first all-reduce is launched and starts running in the first half of backward."""
    bad = []
    for s in ("overlap", "bucketed"):
        for rank, r in d[f"timeline_{s}.json"]["ranks"].items():
            mid = r["backward_end_ms"] - 0.5 * r["backward_ms"]
            if not r["first_collective_start_ms"] < mid:
                bad.append(f"{s} rank {rank}: first all-reduce starts at {r['first_collective_start_ms']:.2f} ms, "
                           f"not in the first half of backward (ends {r['backward_end_ms']:.2f} ms)")
    return bad


@claim("timeline_bucketed.png", "the compute row (data, forward and backward per layer", TIMELINES)
def timelines_legend_complete(d):
    """Every colour drawn is in the legend (the caption names the rows' contents from it)."""
    bad = []
    for name in TIMELINES:
        t = d[name]
        missing = sorted(set(t["drawn"]) - set(t["legend"]))
        if missing:
            bad.append(f"{name}: drawn but not in the legend: {', '.join(missing)}")
    return bad


# ---- scaling -------------------------------------------------------------------------------------------
def scaling_row(rows, mode, n):
    return next(r for r in rows if r["mode"] == mode and int(r["ranks"]) == n)


@claim("scaling.png", "a weak-scaling rank computes the same rows at every rank count, yet its forward + backward "
       "takes", ["scaling.csv"])
def scaling_time_slicing(d):
    """Weak scaling: every rank computes the same rows, so forward + backward should not grow with
    the ranks on a core per rank; time-slicing 4 ranks over 2 cores makes it grow by >= 1.5x (2x
    if the two cores were all ours)."""
    rows = d["scaling.csv"]
    top = max(int(r["ranks"]) for r in rows)
    w2, wt = scaling_row(rows, "weak", 2), scaling_row(rows, "weak", top)
    c2 = float(w2["forward_ms"]) + float(w2["backward_ms"])
    ct = float(wt["forward_ms"]) + float(wt["backward_ms"])
    bad = [] if top == 4 else [f"the sweep's largest rank count is {top}, the caption speaks of 4"]
    if ct < 1.5 * c2:
        bad.append(f"weak scaling: forward + backward {c2:.1f} ms at 2 ranks, {ct:.1f} ms at {top}: not >= 1.5x")
    return bad


def scaling_side(rows):
    """Where the measured efficiency at the largest rank count lies against the prediction, in the
    caption's words (figures.py writes the same)."""
    top = max(int(r["ranks"]) for r in rows)
    side = {m: "below" if float(scaling_row(rows, m, top)["efficiency_measured"])
            < float(scaling_row(rows, m, top)["efficiency_predicted"]) else "above" for m in ("strong", "weak")}
    if side["strong"] == side["weak"]:
        return f"at {top} ranks the measured efficiency is {side['strong']} the prediction in both modes"
    return f"at {top} ranks the measured efficiency is {side['strong']} the prediction in strong scaling and " \
           f"{side['weak']} it in weak scaling"


@claim("scaling.png", lambda d: scaling_side(d["scaling.csv"]), ["scaling.csv"])
def scaling_gap(d):
    """The caption says on which side of the prediction the measurement lies; the phrase is computed
    from the data, so a caption that says 'below' fails when the points are above."""
    return []


# ---- compression -----------------------------------------------------------------------------------------
def loss_modes(d):
    return {m["run"]: m for m in d["compression_loss.json"]["modes"]}


@claim("compression_loss.png", "Every other mode is within 2% of fp32", ["compression_loss.json"])
def loss_within_2pct(d):
    m = loss_modes(d)
    ref = m["none"]["last50_mean"]
    return [f"{x['label']}: last-50 mean {x['last50_mean']:.4f} is {100 * (x['last50_mean'] / ref - 1):+.1f}% "
            "from fp32, not within 2%" for k, x in m.items()
            if k not in ("none", "powersgd_r1_noef") and abs(x["last50_mean"] / ref - 1) > 0.02]


@claim("compression_loss.png", "error feedback is what puts the dropped part back", ["compression_loss.json"])
def loss_error_feedback_matters(d):
    """Rank-1 PowerSGD without error feedback ends >= 5% above fp32 and >= 5 points above the same
    run with error feedback (the deterministic runs' last-50 means; one step moves by a few %)."""
    m = loss_modes(d)
    ref = m["none"]["last50_mean"]
    noef, ef = m["powersgd_r1_noef"]["last50_mean"] / ref - 1, m["powersgd_r1"]["last50_mean"] / ref - 1
    bad = []
    if noef < 0.05:
        bad.append(f"rank 1 without error feedback is {100 * noef:+.1f}% from fp32, not >= +5%")
    if noef - ef < 0.05:
        bad.append(f"rank 1: without error feedback {100 * noef:+.1f}%, with {100 * ef:+.1f}%: not 5 points apart")
    return bad


@claim("compression_bytes.png", "16-bit formats halve the bytes", ["compression_bytes.json"])
def bytes_halved(d):
    by = {r["grad_compression"]: r for r in d["compression_bytes.json"]["rows"]}
    none = by["none"]["comm_mib_per_step"]
    bad = [f"{k}: {by[k]['comm_mib_per_step']:.3f} MiB of {none:.3f}, not half" for k in ("fp16", "bf16")
           if abs(by[k]["comm_mib_per_step"] / none - 0.5) > 0.005]
    if by["powersgd"]["comm_mib_per_step"] > none / 10:
        bad.append(f"powersgd moves {by['powersgd']['comm_mib_per_step']:.3f} MiB of {none:.3f}: not 10x fewer")
    return bad


@claim("compression_bytes.png", "on shared memory the bytes are cheap and the encode/decode time is not",
       ["compression_bytes.json"])
def bytes_none_fastest(d):
    """Uncompressed is the fastest (median step time below every compressed mode's)."""
    rows = d["compression_bytes.json"]["rows"]
    none = next(r for r in rows if r["grad_compression"] == "none")
    return [f"{r['grad_compression']} ({r['step_ms']:.1f} ms) is not slower than none ({none['step_ms']:.1f} ms)"
            for r in rows if r is not none and not r["step_ms"] > none["step_ms"]]


# ---- ZeRO memory -----------------------------------------------------------------------------------------
@claim("zero_memory.png", "Adam's state and the reduced gradients shrink as 1/n; parameters stay whole",
       ["zero_memory.json"])
def zero_shrinks(d):
    runs = d["zero_memory.json"]["runs"]
    base = next(r for r in runs if r["ranks"] == 1 and r["shard"] == "none")["memory_bytes"]
    bad = []
    for r in runs:
        m, n = r["memory_bytes"], r["ranks"]
        if m["parameters"] != base["parameters"]:
            bad.append(f"np {n} {r['shard']}: parameters {m['parameters']} B, not {base['parameters']} B")
        if r["shard"] != "none":
            # A shard is a 1/n slice of the flat buffer, rounded up to whole aligned elements: 1% slack.
            want = base["optimizer_state"] / n
            if abs(m["optimizer_state"] / want - 1) > 0.01:
                bad.append(f"np {n} {r['shard']}: Adam state {m['optimizer_state']} B, not 1/{n} of {base['optimizer_state']}")
        if r["shard"] == "gradients":
            want = base["gradients"] / n
            if abs(m["reduced_gradients"] / want - 1) > 0.01:
                bad.append(f"np {n} gradients: reduced-gradient shard {m['reduced_gradients']} B, not 1/{n} of "
                           f"{base['gradients']}")
    return bad


@claim("zero_memory.png", "ZeRO-2 adds a two-bucket gradient pool (2 x 4 MiB) instead of the full gradient buffer",
       ["zero_memory.json"])
def zero2_pool(d):
    bad = []
    for r in d["zero_memory.json"]["runs"]:
        if r["shard"] != "gradients":
            continue
        m = r["memory_bytes"]
        if m["gradients"] != 0:
            bad.append(f"np {r['ranks']} ZeRO-2 still holds a {m['gradients']} B gradient buffer")
        if m["comm_buffers"] != 2 * 4 * 2 ** 20:
            bad.append(f"np {r['ranks']} ZeRO-2 pool is {m['comm_buffers']} B, not 2 x 4 MiB")
    return bad


# ---- numbers the chapters quote -----------------------------------------------------------------------
def chapter_checks(root, d):
    bad = []
    # ddp.md: "naive B / W / S, flat ..." (rank 0 of the drawn step).
    ddp = open(os.path.join(root, "docs", "ddp.md")).read()
    for s in ("naive", "flat", "overlap", "bucketed"):
        r0 = d[f"timeline_{s}.json"]["ranks"]["0"]
        want = f"{s} {r0['backward_ms']:.1f} / {r0['comm_wait_ms']:.1f} / {r0['step_ms']:.1f}"
        if want not in re.sub(r"\s+", " ", ddp):
            bad.append(f"docs/ddp.md does not quote the drawn {s} step as '{want}'")
    # bucketing.md: the gap between measured and predicted, as the figure's data has it.
    ref = d["bucket_sweep.json"]["reference"]
    want = (f"busy {ref['measured_busy_ms']:.1f} ms per step against the {ref['predicted_comm_ms']:.1f} ms "
            "the model gives them")
    if want not in re.sub(r"\s+", " ", open(os.path.join(root, "docs", "bucketing.md")).read()):
        bad.append(f"docs/bucketing.md does not explain the gap with analyze's run as '{want}'")
    # compression.md: the loss table's rows equal the figure's runs.
    text = open(os.path.join(root, "docs", "compression.md")).read()
    table = {}
    for line in text.splitlines():
        cells = [c.strip().replace("*", "") for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and re.fullmatch(r"\d+", cells[1] or "x"):
            table[cells[0]] = cells
    m = loss_modes(d)
    none = m["none"]
    for k, x in m.items():
        row = table.get(x["label"])
        if row is None:
            bad.append(f"docs/compression.md's loss table has no row '{x['label']}'")
            continue
        want = [str(x["steps"]), f"{x['final']:.4f}", f"{x['last50_mean']:.4f}", f"{x['mib_per_step']:.3f}"]
        got = [row[1], row[2], row[4], row[6].split()[0] if row[6] else ""]
        if got != want:
            bad.append(f"docs/compression.md, '{x['label']}': steps/final/last-50/MiB {got}, the runs give {want}")
        if k != "none":
            for col, key, what in ((3, "final", "final"), (5, "last50_mean", "last-50")):
                rel = f"{100 * (x[key] / none[key] - 1):+.1f}%".replace("-", "−")
                if row[col] != rel:
                    bad.append(f"docs/compression.md, '{x['label']}': {what} vs none {row[col]}, the runs give {rel}")
    return bad


def load(img, name):
    path = os.path.join(img, "data", name)
    if name.endswith(".csv"):
        with open(path) as f:
            return list(csv.DictReader(f))
    with open(path) as f:
        return json.load(f)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=os.path.normpath(os.path.join(here, "..", "..")))
    ap.add_argument("--img", default=None)
    ap.add_argument("--schema-only", action="store_true")
    a = ap.parse_args()
    img = a.img or os.path.join(a.root, "docs", "img")
    try:
        captions = re.sub(r"\s+", " ", open(os.path.join(img, "figures.md")).read())
    except OSError as e:
        print(f"check_figure_claims: {e}", file=sys.stderr)
        return 2
    failures, data = [], {}
    for figure, phrase, files, fn in CHECKS:
        try:
            d = {f: data.setdefault(f, load(img, f)) for f in files}
            bad = fn(d)
            if callable(phrase):  # the caption's words follow from the data
                phrase = phrase(d)
        except (OSError, KeyError, StopIteration, IndexError, ValueError, TypeError, ZeroDivisionError) as e:
            failures.append(f"{figure}: cannot check {fn.__name__}: {type(e).__name__}: {e}")
            continue
        if a.schema_only:
            continue
        if phrase not in captions:
            bad = [f"the caption no longer says '{phrase}' (change this check with it)"] + bad
        for b in bad:
            failures.append(f"{figure}: '{phrase}': {b}")
        print(("FAIL " if bad else "ok   ") + f"{figure}: {phrase}")
    if not a.schema_only:
        try:
            bad = chapter_checks(a.root, {f: data.setdefault(f, load(img, f))
                                          for f in TIMELINES + ["compression_loss.json", "bucket_sweep.json"]})
        except (OSError, KeyError) as e:
            bad = [f"cannot check the chapters' numbers: {type(e).__name__}: {e}"]
        failures += bad
        print(("FAIL " if bad else "ok   ") + "chapters quote the figures' numbers (ddp.md, bucketing.md, "
              "compression.md)")
    for f in failures:
        print(f"FAIL: {f}")
    print(f"{'FAILED' if failures else 'PASS'}: {len(CHECKS)} caption claims"
          + (" (data present and readable only)" if a.schema_only else "") + f", {len(failures)} problem(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
