#!/bin/bash
# check_docs.sh — the course is self-contained: every relative Markdown link in README.md,
# docs/*.md, docs/img/*.md and docs/labs/** points to a file or folder that exists in the
# repository, none of those files mentions a path outside it (the team's private folder beside the
# repository, or an absolute path of the machine the docs were written on: see the pattern in (b)), and every
# source line range they quote as `path:A-B` exists (the file has at least B lines); docs/index.md
# links every page of docs/.
#
# Usage: tests/docs/check_docs.sh [REPO_ROOT]   (default: the repository holding this script)
# Exit 0 when clean; 1 with one line per problem (file:line: what) otherwise. Cheap: grep and awk
# over a few dozen files, no build needed. Links inside fenced code blocks (```) and inline code
# (`...`) are not links; http(s)/mailto links and pure #anchors are not checked (no network, and
# anchors depend on the renderer's slug rules).
set -euo pipefail

root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
cd "$root"
if [ ! -f README.md ] || [ ! -d docs ]; then
  echo "check_docs: $root is not the repository root" >&2
  exit 2
fi

# The files checked: README.md, docs/*.md, docs/img/*.md, every Markdown file under docs/labs (link check), and
# every text file under docs/labs (path check: starters and graders' notes too).
md_files=(README.md docs/*.md docs/img/*.md)
while IFS= read -r -d '' f; do md_files+=("$f"); done < <(find docs/labs -type f -name '*.md' -print0 | sort -z)
text_files=("${md_files[@]}")
while IFS= read -r -d '' f; do
  case "$f" in *.md) ;; *) grep -Iq . "$f" 2>/dev/null && text_files+=("$f") ;; esac
done < <(find docs/labs -type f -print0 | sort -z)

problems=0
report() { echo "$1"; problems=$((problems + 1)); }

# (a) relative links. awk prints "line<TAB>target" for every [text](target) and every reference
# definition "[label]: target" outside fenced code, with inline code spans removed first.
extract_links() {
  awk '
    BEGIN { prev_open = 1 }
    /^[ \t]*(```|~~~)/ { fence = !fence; prev_open = 1; next }
    fence { next }
    {
      line = $0
      gsub(/`[^`]*`/, "", line)                       # inline code is not a link
      # "[label]: target" defines a link only where a paragraph may start (CommonMark: a
      # definition cannot interrupt a paragraph), i.e. after a blank line or another definition.
      is_def = 0
      if (prev_open && match(line, /^ *\[[^]]+\]:[ \t]*[^ \t]+/)) {
        def = substr(line, RSTART, RLENGTH); sub(/^ *\[[^]]+\]:[ \t]*/, "", def)
        print NR "\t" def
        is_def = 1
      }
      prev_open = is_def || line ~ /^[ \t]*$/
      while (match(line, /\]\([^)]*\)/)) {            # ](target) or ](target "title")
        t = substr(line, RSTART + 2, RLENGTH - 3)
        line = substr(line, RSTART + RLENGTH)
        sub(/^[ \t]*</, "", t); sub(/>[ \t]*$/, "", t)
        sub(/[ \t]+".*"$/, "", t)
        print NR "\t" t
      }
    }' "$1"
}

for f in "${md_files[@]}"; do
  dir=$(dirname "$f")
  while IFS=$'\t' read -r line target; do
    [ -n "$target" ] || continue
    case "$target" in
      http://* | https://* | mailto:* | '#'*) continue ;;
      /*) report "$f:$line: absolute link '$target' (links must be relative to the file)"; continue ;;
      *://*) continue ;;
    esac
    path=${target%%#*}
    path=${path%%\?*}
    path=${path//%20/ }
    [ -n "$path" ] || continue
    if [ ! -e "$dir/$path" ]; then
      report "$f:$line: broken link '$target' ($dir/$path does not exist)"
      continue
    fi
    # A link may not leave the repository (e.g. ../../../somewhere).
    real=$(realpath -m "$dir/$path")
    case "$real/" in
      "$(realpath "$root")"/*) ;;
      *) report "$f:$line: link '$target' leaves the repository ($real)" ;;
    esac
  done < <(extract_links "$f")
done

# (b) paths outside the repository named anywhere in those files (code blocks included: a command
# that reads a file outside the repository is just as broken).
for f in "${text_files[@]}"; do
  while IFS=: read -r line _; do
    report "$f:$line: names a path outside the repository: $(sed -n "${line}p" "$f" | cut -c1-120)"
  done < <(grep -n -E '\.\./shared|(^|[^A-Za-z0-9_.~-])/work(/|[^A-Za-z0-9_-]|$)' "$f" || true)
done

# shellcheck disable=SC2016  # the backquotes are literal: Markdown inline code
line_ref_re='`[A-Za-z0-9_./-]+\.[A-Za-z0-9]+:[0-9]+(-[0-9]+)?`'
# (c) source line ranges quoted as `path:A-B` or `path:A` (repository-relative, e.g. the reading
# path): the file exists and has line B (a range past the end means the code moved).
for f in "${md_files[@]}"; do
  while IFS=: read -r line ref; do
    ref=${ref#\`}; ref=${ref%\`}
    file=${ref%:*}; range=${ref##*:}
    first=${range%-*}; last=${range#*-}
    if [ ! -f "$file" ]; then
      report "$f:$line: line reference '$ref' names a file that does not exist"
    elif [ "$first" -gt "$last" ] || [ "$last" -gt "$(wc -l < "$file")" ]; then
      report "$f:$line: line reference '$ref' is past the end of $file ($(wc -l < "$file") lines)"
    fi
  done < <(grep -n -o -E "$line_ref_re" "$f" || true)
done

# (d) docs/index.md lists every page of docs/ (a chapter or manual page nobody can find is lost).
for page in docs/*.md; do
  name=$(basename "$page")
  [ "$name" = index.md ] && continue
  grep -q -E "\]\(${name//./\\.}(#[^)]*)?\)" docs/index.md || report "docs/index.md: does not link $page"
done

checked=${#md_files[@]}
if [ "$problems" -ne 0 ]; then
  echo "check_docs: $problems problem(s) in $checked Markdown file(s) (+ $((${#text_files[@]} - checked)) other lab file(s))"
  exit 1
fi
echo "check_docs: OK ($checked Markdown file(s), $((${#text_files[@]} - checked)) other lab file(s); relative links resolve, line ranges exist, index complete, no path outside the repository)"
