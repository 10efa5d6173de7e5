#!/usr/bin/env python3
"""plot_hier.py OUTDIR PNG — the figure of docs/hierarchical.md from measure_hier.sh's OUTDIR.

Left: bus bandwidth of each all-reduce backend on 2 emulated hosts x 2 ranks (2x2.csv, out of
place), with the per-link-class model's prediction for the flat ring and hier (analyze_2x2.json).
Right: the flat ring and hier with one host's link 10x slower (2x2_slow_h2.csv), both placements of
the buffer. busbw = size / time x 2(n-1)/n, n = 4. Needs Debian's python3-matplotlib.
"""
import csv
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MIB = 1024.0 * 1024.0
BUS = 2.0 * 3 / 4  # all-reduce bus factor at n = 4


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def main(outdir, png):
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    r = rows(os.path.join(outdir, "2x2.csv"))
    for backend in ("mpi", "ring", "rd", "hier"):
        pts = sorted((float(x["bytes"]), float(x["busbw_gbs"])) for x in r
                     if x["backend"] == backend and x["in_place"] == "0")
        a.plot([p[0] / MIB for p in pts], [p[1] for p in pts], "o-", label=f"{backend} measured")
    pred = json.load(open(os.path.join(outdir, "analyze_2x2.json")))["rows"]
    for key, style in (("ring", "k--"), ("hier", "r--")):
        a.plot([p["bytes"] / MIB for p in pred], [p["bytes"] / (p[f"{key}_predicted_ms"] * 1e-3) * BUS / 1e9 for p in pred],
               style, label=f"{key} predicted (per-class model)")
    a.set_xscale("log", base=2)
    a.set_xlabel("all-reduce size (MiB)")
    a.set_ylabel("busbw (GB/s)")
    a.set_title("2 hosts x 2 ranks, every link 1 Gbit/s")
    a.legend(fontsize=8)
    slow = os.path.join(outdir, "2x2_slow_h2.csv")
    if os.path.exists(slow):
        s = rows(slow)
        for backend, color in (("ring", "C1"), ("hier", "C3")):  # the left panel's colours
            for place, style in (("0", "o-"), ("1", "s:")):
                pts = sorted((float(x["bytes"]), float(x["busbw_gbs"])) for x in s
                             if x["backend"] == backend and x["in_place"] == place)
                b.plot([p[0] / MIB for p in pts], [p[1] for p in pts], style, color=color,
                       label=f"{backend} {'in place' if place == '1' else 'out of place'}")
        b.set_xscale("log", base=2)
        b.set_xlabel("all-reduce size (MiB)")
        b.set_title("host h2's link at 100 Mbit/s, the other at 1 Gbit/s")
        b.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    print(f"wrote {png}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: plot_hier.py OUTDIR PNG")
    main(sys.argv[1], sys.argv[2])
