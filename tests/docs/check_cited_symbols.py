#!/usr/bin/env python3
"""The code the course cites still says what the course says it does (docs/reading_path.md,
docs/pytorch_mapping.md).

A line range that exists can still point at the wrong code (the code moved, or was renamed), so each
citation is resolved by the symbol named beside it:
  reading_path.md   a table row cites `path:A-B` ranges in its first column; every C++ name quoted in
                    its second column (`Trainer::step`, `layer_forward`, `Work`) occurs, as a whole
                    word, inside one of the row's ranges (a qualified name: its last part inside the
                    range, every other part in the file, namespaces ignored), and the first of them,
                    the row's subject, is defined there (`name(`, `name[`, `class name`, ... in the range);
  pytorch_mapping.md  a table row's "where" column names code and the files it is in; every qualified
                    name there (`comm::make_communicator`, `GradSync::check_all_ready`) occurs in one
                    of the files the same cell names.
Usage: check_cited_symbols.py ROOT         check the repository at ROOT
       check_cited_symbols.py --self-test  the check fails on a renamed symbol, a moved range and a
                                           symbol cited from the wrong file
Under a second; no build products needed.
"""
import os
import re
import shutil
import sys
import tempfile

NAMESPACES = {"microddp", "core", "kernels", "comm", "model", "ddp", "zero", "io", "perf", "app", "data", "labs",
              "gpu", "std"}
# A C++ name as the docs quote it: identifiers joined by ::, optionally followed by () (a call).
NAME = re.compile(r"^~?[A-Za-z_]\w*(::~?[A-Za-z_]\w*)*(\(\))?$")
CODE = re.compile(r"`([^`]+)`")
RANGE = re.compile(r"^([\w./-]+\.(?:hpp|cpp|cu|cuh|h|py|sh|txt)):(\d+)(?:-(\d+))?$")
PATH = re.compile(r"^[\w./-]+\.(?:hpp|cpp|cu|cuh|h)$")


def cells(line):
    """The cells of a Markdown table row (escaped pipes \\| stay inside their cell)."""
    parts = re.split(r"(?<!\\)\|", line.strip())
    return [p.strip() for p in parts[1:-1]]


def is_name(span):
    if not NAME.match(span):
        return False
    bare = span[:-2] if span.endswith("()") else span
    # One lowercase word without an underscore is prose or an option value ("overlap"), not a name.
    return "::" in bare or "_" in bare or any(c.isupper() for c in bare)


def name_parts(span):
    bare = span[:-2] if span.endswith("()") else span
    parts = [p for p in bare.split("::") if p not in NAMESPACES]
    return parts or [bare.split("::")[-1]]


def word_in(word, text):
    return re.search(r"(?<![\w])" + re.escape(word.lstrip("~")) + r"(?![\w])", text) is not None


def read(root, rel):
    path = os.path.join(root, rel)
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def check_reading_path(root):
    errors = []
    page = "docs/reading_path.md"
    lines = read(root, page)
    if lines is None:
        return [page + ": missing"]
    for no, line in enumerate(lines, 1):
        if not line.startswith("|"):
            continue
        row = cells(line)
        if len(row) < 2:
            continue
        ranges = [RANGE.match(s) for s in CODE.findall(row[0])]
        ranges = [m for m in ranges if m]
        if not ranges:
            continue
        names = [s for s in CODE.findall(row[1]) if is_name(s)]
        texts = []
        for m in ranges:
            src = read(root, m.group(1))
            if src is None:
                errors.append(f"{page}:{no}: {m.group(1)} does not exist")
                continue
            first, last = int(m.group(2)), int(m.group(3) or m.group(2))
            if last > len(src) or first > last:
                errors.append(f"{page}:{no}: {m.group(0)} is outside {m.group(1)} ({len(src)} lines)")
                continue
            texts.append((m.group(0), "\n".join(src[first - 1:last]), "\n".join(src)))
        if names and texts:
            last = name_parts(names[0])[-1].lstrip("~")
            defined = re.compile(r"(?:\b(?:class|struct|enum class|using)\s+" + re.escape(last) + r"\b)|(?:(?<![\w.>])"
                                 + re.escape(last) + r"\s*[(\[{])")
            if not any(defined.search(rng) for _, rng, _ in texts):
                cited = ", ".join(t[0] for t in texts)
                errors.append(f"{page}:{no}: `{names[0]}` (the row's subject) is not defined in {cited}")
        for name in names:
            parts = name_parts(name)
            found = any(word_in(parts[-1], rng) and all(word_in(p, whole) for p in parts[:-1])
                        for _, rng, whole in texts)
            if texts and not found:
                cited = ", ".join(t[0] for t in texts)
                errors.append(f"{page}:{no}: `{name}` is not in {cited}")
    return errors


def check_pytorch_mapping(root):
    errors = []
    page = "docs/pytorch_mapping.md"
    lines = read(root, page)
    if lines is None:
        return [page + ": missing"]
    header = None
    for no, line in enumerate(lines, 1):
        if not line.startswith("|"):
            header = None
            continue
        row = cells(line)
        if header is None:
            header = [c.lower() for c in row]
            continue
        if "where" not in header or set(line) <= set("|-: "):
            continue
        cell = row[header.index("where")] if header.index("where") < len(row) else ""
        spans = CODE.findall(cell)
        files = []
        for s in spans:
            if PATH.match(s):
                src = read(root, s)
                if src is not None:
                    files.append((s, "\n".join(src)))
        if not files:
            continue
        for name in (s for s in spans if is_name(s) and "::" in s):
            parts = name_parts(name)
            if not any(all(word_in(p, text) for p in parts) for _, text in files):
                errors.append(f"{page}:{no}: `{name}` is in none of " + ", ".join(f for f, _ in files))
    return errors


def check(root):
    return check_reading_path(root) + check_pytorch_mapping(root)


def self_test(root):
    """Each planted fault must be reported; the unchanged copy must pass."""
    root = os.path.abspath(root)
    failures = []
    tmp = tempfile.mkdtemp(prefix="cited_symbols_")
    try:
        for rel in ("docs/reading_path.md", "docs/pytorch_mapping.md"):
            os.makedirs(os.path.dirname(os.path.join(tmp, rel)), exist_ok=True)
            shutil.copy(os.path.join(root, rel), os.path.join(tmp, rel))
        os.symlink(os.path.join(root, "src"), os.path.join(tmp, "src"))
        os.symlink(os.path.join(root, "kernels"), os.path.join(tmp, "kernels"))
        if check(tmp):
            failures.append("the unchanged copy fails: " + "; ".join(check(tmp)))
        rp = os.path.join(tmp, "docs/reading_path.md")
        pm = os.path.join(tmp, "docs/pytorch_mapping.md")
        with open(rp, encoding="utf-8") as f:
            reading = f.read()
        with open(pm, encoding="utf-8") as f:
            mapping = f.read()
        cases = [
            ("a renamed symbol", rp, reading.replace("`Trainer::step`", "`Trainer::stride`", 1), "Trainer::stride"),
            ("a moved range", rp, re.sub(r"`src/ddp/trainer\.cpp:(\d+)-(\d+)`", "`src/ddp/trainer.cpp:1-3`",
                                         reading, count=1), "src/ddp/trainer.cpp:1-3"),
            ("a symbol from the wrong file", pm, mapping.replace("(`src/comm/factory.hpp`)",
                                                                 "(`src/comm/work.hpp`)", 1), "make_communicator"),
        ]
        for what, path, text, expect in cases:
            original = reading if path == rp else mapping
            if text == original:
                failures.append(f"{what}: the planted fault did not apply (the pages changed?)")
                continue
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            got = check(tmp)
            if not any(expect in e for e in got):
                failures.append(f"{what}: not reported (got {got})")
            with open(path, "w", encoding="utf-8") as f:
                f.write(original)
    finally:
        shutil.rmtree(tmp)
    return failures


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--self-test":
        failures = self_test(sys.argv[2])
        for f in failures:
            print("check_cited_symbols self-test: " + f, file=sys.stderr)
        print("check_cited_symbols self-test: " + ("FAILED" if failures else "OK (3 planted faults reported)"))
        return 1 if failures else 0
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    errors = check(sys.argv[1])
    for e in errors:
        print(e, file=sys.stderr)
    print("check_cited_symbols: " + (f"{len(errors)} citation(s) do not resolve" if errors else "OK"))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
