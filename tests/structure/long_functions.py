#!/usr/bin/env python3
"""long_functions.py — the functions of src/ and kernels/ longer than 80 lines, and the check that
docs/design.md names each of them with its reason ("Functions over 80 lines").

A function's length is counted from the first line of its signature to its closing brace. The scan
is a brace matcher over the source with comments, string and character literals and preprocessor
lines blanked out: a `{` outside any function opens a function when the text before it (since the
last `;` or scope brace) ends like a signature — `)` possibly followed by const, override, final,
noexcept, a trailing return type, or a constructor's member initialisers; `namespace`, `class`,
`struct`, `union` and `enum` open scopes that may hold functions; any other brace (an aggregate
initialiser) is skipped. Lambdas and local classes count towards the function that holds them.

  long_functions.py ROOT            list them: "lines  path:line  name", longest first
  long_functions.py ROOT --check    also compare with docs/design.md; exit 1 on a function over the
                                    limit that the design does not name, or a name that is no longer
                                    over it (the list stays true)
  long_functions.py --self-test     the check fails on a tree it should fail on (a long function not
                                    named, a name that is not long) and passes the same tree fixed
"""
import pathlib
import re
import sys

LIMIT = 80
SIGNATURE_END = re.compile(
    r"\)\s*(?:const\s*|override\s*|final\s*|noexcept\s*(?:\([^)]*\))?\s*|&\s*|->\s*[\w:<>,\s*&]+?\s*)*$")
CTOR_INIT = re.compile(r"\)\s*(?:noexcept\s*)?:\s*[\w:]+\s*[({]", re.S)
SCOPE = re.compile(r"\b(namespace|class|struct|union|enum)\b")
DESIGN_ENTRY = re.compile(r"^\s*[-*|]\s*`([\w/.\-]+\.(?:cpp|hpp|cu|cuh|h)):([\w:~]+)`", re.M)


def blank(text):
    """Comments, string/char literals and preprocessor lines replaced by spaces (newlines kept)."""
    out, i, n = [], 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and c == "#":
            j = i
            while j < n and text[j] != "\n":
                j += 2 if text[j] == "\\" and j + 1 < n else 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        if c == "\n":
            at_line_start = True
        elif not c.isspace():
            at_line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and (text[i - 1].isalnum()):  # a digit separator: 1'000
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * (j - i - 2) + c if j - i >= 2 else " " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path, rel):
    """(name, first line, lines) of every function defined in the file."""
    text = blank(path.read_text(errors="replace"))
    found = []
    stack = []  # 'scope' | 'func' | 'other'
    header_start = 0  # index where the text before the next brace begins
    func_start = None  # (name, line) of the function being read
    line = 1
    for i, c in enumerate(text):
        if c == "\n":
            line += 1
        in_func = "func" in stack
        if in_func:
            if c == "{":
                stack.append("other")
            elif c == "}":
                kind = stack.pop()
                if kind == "func":
                    name, first = func_start
                    found.append((name, first, line - first + 1))
                    header_start = i + 1
            continue
        if c == ";":
            header_start = i + 1
        elif c == "{":
            header = text[header_start:i]
            stripped = header.strip()
            if SIGNATURE_END.search(stripped) or CTOR_INIT.search(stripped):
                name_m = re.search(r"((?:[\w~]+::)*(?:operator\s*[^\s(]+|[\w~]+))\s*(?:<[^()]*>)?\s*\(", stripped)
                lead = len(header) - len(header.lstrip())
                first = line - text[header_start + lead:i].count("\n")
                func_start = (name_m.group(1) if name_m else "?", first)
                stack.append("func")
            elif SCOPE.search(stripped) and "=" not in stripped:
                stack.append("scope")
                header_start = i + 1
            else:
                stack.append("other")
        elif c == "}":
            kind = stack.pop() if stack else "scope"
            if kind == "scope":
                header_start = i + 1
    return found


def long_functions(root):
    result = []
    for d in ("src", "kernels"):
        for p in sorted((root / d).rglob("*")):
            if p.suffix not in (".cpp", ".hpp", ".cu", ".cuh", ".h"):
                continue
            rel = p.relative_to(root).as_posix()
            for name, first, lines in functions(p, rel):
                if lines > LIMIT:
                    result.append((lines, rel, first, name))
    return sorted(result, key=lambda r: (-r[0], r[1], r[2]))


def self_test():
    import tempfile
    body = "\n".join(f"  x += {i};" for i in range(LIMIT))
    source = ("// a comment with a brace {\nnamespace n {\nstruct S { int a = 1; };\n"
              f"int S_long(int x) {{\n  const char* s = \"}}\";\n{body}\n  return x;\n}}\n"
              "int short_one() { return 1; }\n}  // namespace n\n")
    cases = [("", 1), ("- `src/t.cpp:S_long` — why\n", 0), ("- `src/t.cpp:S_long` — why\n- `src/t.cpp:short_one` — no\n", 1)]
    failures = 0
    for design, want in cases:
        with tempfile.TemporaryDirectory() as d:
            root = pathlib.Path(d)
            (root / "src").mkdir()
            (root / "kernels").mkdir()
            (root / "docs").mkdir()
            (root / "src" / "t.cpp").write_text(source)
            (root / "docs" / "design.md").write_text("# d\n" + design)
            got = check(root)
            if got != want:
                print(f"self-test: design {design!r}: exit {got}, expected {want}")
                failures += 1
    print(f"long_functions self-test: {len(cases) - failures} of {len(cases)} cases as expected")
    return 1 if failures else 0


def check(root, list_them=False):
    found = long_functions(root)
    if list_them:
        for lines, rel, first, name in found:
            print(f"{lines:5d}  {rel}:{first}  {name}")
        print(f"long_functions: {len(found)} function(s) over {LIMIT} lines")
    design = (root / "docs" / "design.md").read_text()
    named = set(DESIGN_ENTRY.findall(design))
    have = {(rel, name) for _, rel, _, name in found}
    # The design names a function by its file and its (qualified) name as the scan prints it.
    errors = [f"{rel}:{name}: {lines} lines, over {LIMIT}, and docs/design.md ('Functions over 80 lines') "
              f"does not name it with its reason: split it, or name it there"
              for lines, rel, _, name in found if (rel, name) not in named]
    errors += [f"docs/design.md names {rel}:{name} as over {LIMIT} lines; it is not (any more): remove it"
               for rel, name in sorted(named - have)]
    for e in errors:
        print(e)
    return 1 if errors else 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2])
    if "--check" in sys.argv[2:]:
        return check(root, list_them=True)
    for lines, rel, first, name in long_functions(root):
        print(f"{lines:5d}  {rel}:{first}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
