#!/usr/bin/env python3
"""figure_claims_can_fail.py REPO — check_figure_claims.py catches a broken claim.

Copies the figures' data and the chapters it compares (docs/img, docs/ddp.md, docs/bucketing.md,
docs/compression.md)
into a temporary folder, then breaks one claim at a time: the untouched copy must pass, and each
broken copy must fail and name the claim that broke. Each case is a small edit of the committed data
the way a bad measurement or a stale caption would look. Under a second.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile


def edit_json(root, name, fn):
    path = os.path.join(root, "docs", "img", "data", name)
    with open(path) as f:
        d = json.load(f)
    fn(d)
    with open(path, "w") as f:
        json.dump(d, f)


def busbw_flat(d):
    """The ring as slow per byte at 16 KiB as at 1 KiB: not latency-bound."""
    rows = {r["bytes"]: r for r in d["runs"][0]["rows"] if r["backend"] == "ring"}
    rows[16384]["busbw_gbs"] = rows[1024]["busbw_gbs"]


def flatten_bucket_left(d):
    """The smallest cap as fast as the best: no left arm of the U."""
    best = min(x["step_ms"] for x in d["measured"])
    d["measured"][0]["step_ms"] = best * 0.99


def no_error_feedback_gap(d):
    modes = {m["run"]: m for m in d["modes"]}
    modes["powersgd_r1_noef"]["last50_mean"] = modes["powersgd_r1"]["last50_mean"]


def naive_overlaps(d):
    r0 = d["ranks"]["0"]
    r0["first_collective_start_ms"] = r0["backward_end_ms"] - 1.0


def grey_not_in_legend(d):
    d["legend"] = [k for k in d["legend"] if k != "data"]


def ring_adds_twice(d):
    """A reduce-scatter step in which a rank receives the block it already summed."""
    s0 = [x for x in d["schedule"] if x["phase"] == "reduce_scatter" and x["step"] == 1]
    s0[0]["recv_block"] = (s0[0]["recv_block"] + 1) % d["ranks"]


def zero_params_shrink(d):
    r = next(r for r in d["runs"] if r["ranks"] > 1 and r["shard"] == "optimizer")
    r["memory_bytes"]["parameters"] //= 2


def compression_table_stale(root):
    path = os.path.join(root, "docs", "compression.md")
    text = open(path).read()
    with open(os.path.join(root, "docs", "img", "data", "compression_loss.json")) as f:
        none = next(m for m in json.load(f)["modes"] if m["run"] == "none")
    old = f"{none['last50_mean']:.4f}"
    assert old in text, "compression.md does not quote the fp32 run's last-50 mean"
    open(path, "w").write(text.replace(old, f"{none['last50_mean'] * 1.01:.4f}", 1))


def caption_reworded(root):
    path = os.path.join(root, "docs", "img", "figures.md")
    text = open(path).read()
    open(path, "w").write(text.replace("16-bit formats halve the bytes", "16-bit formats shrink the bytes"))


CASES = [  # (what is broken, how, the words the failure must contain)
    ("busbw shape", lambda r: edit_json(r, "busbw.json", busbw_flat), "busbw.png"),
    ("bucket U-shape", lambda r: edit_json(r, "bucket_sweep.json", flatten_bucket_left), "bucket_sweep.png"),
    ("error feedback", lambda r: edit_json(r, "compression_loss.json", no_error_feedback_gap),
     "error feedback is what puts the dropped part back"),
    ("naive after backward", lambda r: edit_json(r, "timeline_naive.json", naive_overlaps),
     "naive and flat start communicating after backward"),
    ("timeline legend", lambda r: edit_json(r, "timeline_flat.json", grey_not_in_legend), "not in the legend: data"),
    ("ring schedule", lambda r: edit_json(r, "ring_schedule.json", ring_adds_twice), "ring_schedule.png"),
    ("ZeRO parameters", lambda r: edit_json(r, "zero_memory.json", zero_params_shrink), "parameters stay whole"),
    ("chapter table", compression_table_stale, "docs/compression.md"),
    ("caption wording", caption_reworded, "the caption no longer says '16-bit formats halve the bytes'"),
]


def main():
    repo = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    checker = os.path.join(repo, "tests", "docs", "check_figure_claims.py")
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        def fresh():
            root = os.path.join(tmp, "repo")
            shutil.rmtree(root, ignore_errors=True)
            os.makedirs(os.path.join(root, "docs"))
            shutil.copytree(os.path.join(repo, "docs", "img"), os.path.join(root, "docs", "img"))
            for f in ("ddp.md", "bucketing.md", "compression.md"):
                shutil.copy(os.path.join(repo, "docs", f), os.path.join(root, "docs", f))
            return root

        def check(root):
            p = subprocess.run([sys.executable, checker, "--root", root], capture_output=True, text=True)
            return p.returncode, p.stdout + p.stderr

        rc, out = check(fresh())
        if rc != 0:
            print(f"FAIL: the untouched copy does not pass:\n{out}")
            return 1
        for what, breaker, words in CASES:
            root = fresh()
            breaker(root)
            rc, out = check(root)
            fails = [line for line in out.splitlines() if line.startswith("FAIL:")]
            if rc == 1 and any(words in line for line in fails):
                print(f"ok   {what}: caught")
            else:
                failed += 1
                print(f"FAIL {what}: exit {rc}, no failure naming '{words}':\n{out}")
    print(f"{'FAILED' if failed else 'PASS'}: {len(CASES) - failed} of {len(CASES)} broken claims caught")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
