#!/usr/bin/env python3
"""run_chapter_commands.py — every cheap `microddp` command of the course's chapters runs.

Usage: run_chapter_commands.py SRC_DIR BUILD_DIR [--list]

The chapters are the pages of docs/index.md's chapter table. From their fenced code blocks this
takes every command line that runs `build/microddp` (directly, through `mpirun`/`mpiexec`, or through
a variable the block set, e.g. `$M -np 2 build/microddp ...`), joins `\\`-continued lines, and runs it
the way a student would, from a scratch directory where `build` is BUILD_DIR — at small sizes, so
the whole course runs in about a minute: steps, iterations, rounds, epochs and message sizes are
capped (the cap is printed with each command), never raised. A chapter's commands run in order in
one directory, so a file a command writes (`--save-run`, `--metrics`, `--json`) is there for the
next. Skipped, and counted as such: commands that need what CI has not got (a GPU: `--device cuda`;
emulated hosts or SLURM: `cluster`, `srun`, `sbatch`; a data file the chapter never made), and
placeholders (`<bytes>`). Each command must exit 0 within its timeout; the test fails naming the
chapter, the line and the output tail of every one that does not, and also when fewer commands ran
than it expects (so an extractor that silently finds nothing fails too).
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

MIN_COMMANDS = 25  # at the time of writing 40+ run; fewer means the extractor broke
TIMEOUT_S = 90

# Flags whose value is capped (flag -> cap) for every subcommand, and per subcommand; values are
# never raised. DEFAULTS: what a subcommand gets appended when the chapter left the flag at its
# default (a default run is sized for a real measurement, not for a check that it runs).
CAPS = {"--steps": 3, "--iters": 2, "--warmup": 1, "--rounds": 1, "--epochs": 1, "--max-ranks": 8, "--fit-max-mb": 1,
        "--depth": 4, "--width": 64, "--global-batch": 64, "--batch": 64, "--log-every": 1}
SUB_CAPS = {
    "collectives": {"-b": 1 << 12, "-e": 1 << 16, "--min-bytes": 1 << 12, "--max-bytes": 1 << 16, "-n": 2, "-w": 1,
                    "--overlap-bytes": 1 << 16},
    "links": {"--bytes": 1 << 16},
}
DEFAULTS = {
    "train": ["--steps", "3"], "baseline": ["--steps", "3"], "manual": ["--steps", "3"], "hooks": ["--steps", "2"],
    "ddp": ["--steps", "2", "--rounds", "1", "--width", "64", "--depth", "4"],
    "analyze": ["--steps", "2", "--width", "64", "--depth", "4"],
    "collectives": ["--max-bytes", "65536", "--iters", "2"],
    "compute": ["--iters", "2", "--width", "64"],
}
NP_CAP = 4
# Flags one flag stands for (nccl-tests' short names): a default is not appended beside its alias.
ALIASES = {"--max-bytes": "-e", "--iters": "-n", "--min-bytes": "-b", "--warmup": "-w"}
# Flags whose value is a file the command reads.
READS = ("--data", "--run", "--bench", "--bench-intra", "--bench-inter", "--checkpoint", "--model", "--metrics-in")


def chapters(src):
    index = open(os.path.join(src, "docs", "index.md"), encoding="utf-8").read()
    pages = re.findall(r"^\| *\d+ *\| *\[[^\]]*\]\(([a-z_]+\.md)", index, re.M)
    return list(dict.fromkeys(pages))  # a page may hold two chapters (baseline.md: 1 and 2)


def blocks(text):
    """(first line number, [lines]) of each fenced block."""
    out, cur, start = [], None, 0
    for n, line in enumerate(text.split("\n"), 1):
        if line.startswith("```"):
            if cur is None:
                cur, start = [], n + 1
            else:
                out.append((start, cur))
                cur = None
        elif cur is not None:
            cur.append(line)
    return out


def logical_lines(start, lines):
    """Joins continuation lines; yields (line number, text)."""
    buf, first = "", None
    for i, line in enumerate(lines):
        if first is None:
            first = start + i
        if line.rstrip().endswith("\\"):
            buf += line.rstrip()[:-1] + " "
            continue
        yield first, buf + line
        buf, first = "", None


def parse_scalar(v):
    m = re.fullmatch(r"(\d+)([KMG]?)", v)
    if not m:
        return None
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)]


def subcommand(words, at):
    """`bench ddp` -> "ddp", `train` -> "train": the word naming what runs after build/microddp."""
    rest = [w for w in words[at + 1:] if not w.startswith("-")]
    if not rest:
        return ""
    return rest[1] if rest[0] == "bench" and len(rest) > 1 else rest[0]


def shrink(words):
    """Caps the sizes of one simple command (argv words); returns (words, notes)."""
    out, notes = [], []
    at = next((k for k, w in enumerate(words) if w.endswith("build/microddp")), None)
    if at is None:
        return words, notes
    sub = subcommand(words, at)
    caps = dict(CAPS, **SUB_CAPS.get(sub, {}))
    i = 0
    while i < len(words):
        w = words[i]
        key, val, inline = w, None, False
        if w.startswith("-") and "=" in w:
            key, val = w.split("=", 1)
            inline = True
        elif i + 1 < len(words):
            val = words[i + 1]
        launcher_flag = i < at
        if launcher_flag and key in ("-np", "-n") and val is not None and val.isdigit():
            n = min(int(val), NP_CAP)
            if n != int(val):
                notes.append(f"{key} {val}->{n}")
            out += [key, str(n)]
            i += 2
            continue
        if not launcher_flag and key in caps and val is not None and parse_scalar(val) is not None:
            cap = caps[key]
            v = parse_scalar(val)
            if v > cap:
                notes.append(f"{key} {val}->{cap}")
                v = cap
            out += [f"{key}={v}"] if inline else [key, str(v)]
            i += 1 if inline else 2
            continue
        out.append(w)
        i += 1
    reads = any(f in out for f in ("--run", "--metrics", "--bench", "--bench-intra", "--fit"))
    extra = DEFAULTS.get(sub, [])
    for k in range(0, len(extra), 2):
        if extra[k] not in out and ALIASES.get(extra[k]) not in out and not (sub == "analyze" and reads):
            out += extra[k:k + 2]
            notes.append(f"{extra[k]} {extra[k + 1]} added")
    return out, notes


def split_shell(cmd):
    """The simple commands of one line: `a && b` runs both, `a | grep x` runs a (the filter is the
    reader's), `# comment` dropped. Returns a list of argv lists, or raises ValueError."""
    lex = shlex.shlex(cmd, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    lex.commenters = "#"
    parts, cur, piped = [], [], False
    for tok in lex:
        if tok in ("&&", ";"):
            if cur and not piped:
                parts.append(cur)
            cur, piped = [], False
        elif tok == "|":
            if cur and not piped:
                parts.append(cur)
            cur, piped = [], True
        elif tok in ("||", "&", ">", ">>", "<", "2>"):
            raise ValueError(f"shell operator {tok!r} not supported here")
        elif not piped:
            cur.append(tok)
    if cur and not piped:
        parts.append(cur)
    return parts


SKIP = [
    (r"--device +(cuda|auto)", "needs a GPU"),
    (r"\bsrun\b|\bsbatch\b|salloc", "needs SLURM"),
    (r"netns|cluster\.sh|emulated hosts|\bhost[0-9]", "needs the emulated cluster (ctest -L cluster)"),
    (r"<[a-zA-Z_ ]+>|-np +[A-Z]\b", "a placeholder"),
    (r"\$\{?[A-Z]", "a variable no command of the chapter set"),
    (r"\bnsys\b|compute-sanitizer", "needs a GPU tool"),
    (r"jobs/", "a job script"),
    (r"lab-|--average lab|lab_grade", "a lab seam: fails by design until the lab is done"),
]


def commands(src):
    for page in chapters(src):
        text = open(os.path.join(src, "docs", page), encoding="utf-8").read()
        env = {}  # variables set by the chapter's blocks, in reading order (a later block may use them)
        for start, lines in blocks(text):
            for n, line in logical_lines(start, lines):
                s = line.strip()
                if s.startswith("$ "):
                    s = s[2:]
                assignments = [a.strip() for a in s.split(";") if a.strip()]
                matches = [re.fullmatch(r"([A-Z][A-Z0-9_]*)=(\"[^\"]*\"|'[^']*'|\S+)", a) for a in assignments]
                if assignments and all(matches):
                    for m in matches:
                        env[m.group(1)] = m.group(2).strip("\"'")
                    continue
                if "build/microddp" not in s or s.startswith("#"):
                    continue
                first = s.split()[0]
                if not (first.startswith("build/microddp") or first.startswith("$") or first in ("mpirun", "mpiexec")
                        or re.match(r"[A-Z_]+=", first)):
                    continue  # an output line that names the program
                yield page, n, s, dict(env)


def main():
    src, build = sys.argv[1], os.path.abspath(sys.argv[2])
    listing = "--list" in sys.argv
    ran = skipped = 0
    failures = []
    t0 = time.time()
    for page, n, cmd, env in commands(src):
        expanded = re.sub(r"\$\{?([A-Z][A-Z0-9_]*)\}?", lambda m: env.get(m.group(1), m.group(0)), cmd)
        why = next((reason for pat, reason in SKIP if re.search(pat, expanded)), None)
        if why:
            skipped += 1
            print(f"skip {page}:{n}: {why}: {cmd[:100]}")
            continue
        try:
            parts = split_shell(expanded)
        except ValueError as e:
            failures.append(f"{page}:{n}: cannot parse: {e}: {cmd}")
            continue
        for words in parts:
            # A command that reads a file must find it: made by an earlier command of the chapter (or of
            # the line: `a --json x && b --bench x`), or it is skipped.
            missing = [words[k + 1] for k, w in enumerate(words[:-1]) if w in READS and
                       not (listing or os.path.exists(os.path.join(workdir(page), words[k + 1])))]
            if missing:
                skipped += 1
                print(f"skip {page}:{n}: reads {missing[0]}, which no earlier command of the chapter wrote")
                continue
            words, notes = shrink(words)
            if listing:
                print(f"{page}:{n}: {shlex.join(words)}" + (f"   [{', '.join(notes)}]" if notes else ""))
                continue
            rc, out, took = run(words, page)
            ran += 1
            shrunk = f" [{', '.join(notes)}]" if notes else ""
            if rc == 0:
                print(f"ok   {page}:{n} ({took:.1f} s){shrunk}: {shlex.join(words)[:140]}")
            else:
                tail = "\n    ".join(out.strip().split("\n")[-6:])
                failures.append(f"{page}:{n}: exit {rc}{shrunk}: {shlex.join(words)}\n    {tail}")
    if listing:
        return 0
    print(f"# {ran} commands ran, {skipped} skipped, {len(failures)} failed, in {time.time() - t0:.0f} s")
    for f in failures:
        print("FAIL " + f)
    if ran < MIN_COMMANDS:
        print(f"FAIL only {ran} commands ran (at least {MIN_COMMANDS} expected): the extractor found too few")
        return 1
    return 1 if failures else 0


def run(words, page):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_pml="ob1", OMPI_MCA_mpi_yield_when_idle="1",
               OMPI_MCA_hwloc_base_binding_policy="none")
    words = list(words)
    # Leading VAR=value words are the command's environment, as in a shell.
    while words and re.fullmatch(r"[A-Z][A-Z0-9_]*=\S*", words[0]):
        k, v = words.pop(0).split("=", 1)
        env[k] = v
    if words and words[0] in ("mpirun", "mpiexec") and "--allow-run-as-root" not in words:
        words = [words[0], "--allow-run-as-root"] + words[1:]
    t = time.time()
    try:
        p = subprocess.run(words, cwd=workdir(page), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=TIMEOUT_S, text=True, errors="replace")
        return p.returncode, p.stdout, time.time() - t
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return f"timeout after {TIMEOUT_S} s", out, time.time() - t


_dirs = {}


def workdir(page):
    """One scratch directory per chapter, with `build` pointing at the build under test."""
    if page not in _dirs:
        d = tempfile.mkdtemp(prefix="chapter_" + page.replace(".md", "") + "_", dir=_root)
        os.symlink(os.path.abspath(sys.argv[2]), os.path.join(d, "build"))
        _dirs[page] = d
    return _dirs[page]


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="chapter_commands_") as _root:
        sys.exit(main())
