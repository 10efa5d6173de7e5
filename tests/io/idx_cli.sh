#!/bin/bash
# idx_cli.sh — `make-dataset --from-idx IMAGES LABELS OUT.h5` end to end, on IDX files written here
# (plain and gzip, with printf and gzip: no Python needed):
#   * a good pair imports at np 2 (rank 0 works, the other waits), plain and gzip give the same
#     file contents, `inspect` says VALID, and `train --data` runs on it;
#   * bad input ends every rank with exit 2 and one message naming the file and the problem, and
#     leaves no output file: wrong magic, images and labels swapped, truncated (plain and gzip),
#     extra bytes, a count mismatch, a label out of range, a missing file; options that do not go
#     with --from-idx are refused before MPI starts;
#   * headers that promise gigabytes to terabytes (1 x 40000 x 40000 images in a 785 KB file, plain
#     and gzip; 1000 x 46340 x 46340; 2^31 labels) are "truncated", within 1.5 GiB of address space.
# Usage: idx_cli.sh <microddp> <mpiexec> [mpiexec preflags...]
# shellcheck source=cli_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_lib.sh"
cli_init "$@"

# be32 N: N as 4 big-endian bytes (printf escapes).
be32() { printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($1 >> 24 & 255)) $(($1 >> 16 & 255)) $(($1 >> 8 & 255)) $(($1 & 255)); }
# 6 images of 4 x 5 pixels (pixel k of image i = (7 i + 3 k) mod 256) and their labels 0..2.
N=6 R=4 C=5
{ printf "$(be32 0x803)$(be32 $N)$(be32 $R)$(be32 $C)"
  for ((i = 0; i < N; ++i)); do for ((k = 0; k < R * C; ++k)); do printf "\\x$(printf %02x $(((7 * i + 3 * k) % 256)))"; done; done
} > "$tmp/img.idx"
{ printf "$(be32 0x801)$(be32 $N)"; printf '\x00\x01\x02\x00\x01\x02'; } > "$tmp/lab.idx"
gzip -c "$tmp/img.idx" > "$tmp/img.idx.gz"
gzip -c "$tmp/lab.idx" > "$tmp/lab.idx.gz"

out=$(run 2 make-dataset --from-idx "$tmp/img.idx" "$tmp/lab.idx" "$tmp/plain.h5" --classes 3 2>&1) &&
  grep -q "/inputs (6, 20) float32 = pixel / 255" <<<"$out" && echo "ok   import (plain)" || fail "import: $out"
out=$(run 2 make-dataset --from-idx "$tmp/img.idx.gz" "$tmp/lab.idx.gz" "$tmp/gz.h5" --classes 3 2>&1) &&
  grep -q "gzip" <<<"$out" && echo "ok   import (gzip)" || fail "import gzip: $out"
if command -v h5dump >/dev/null 2>&1; then
  a=$(h5dump -d /inputs -d /labels "$tmp/plain.h5" | grep -v HDF5) b=$(h5dump -d /inputs -d /labels "$tmp/gz.h5" | grep -v HDF5)
  [ -n "$a" ] && [ "$a" == "$b" ] && echo "ok   plain and gzip give the same rows" || fail "plain and gzip files differ"
  # Pixel 1 of image 0 is 3: 3 / 255 = 0.0117647...; image 0, pixel 0 is 0.
  h5dump -d /inputs "$tmp/plain.h5" | grep -q "(0,0): 0, 0.0117647" && echo "ok   pixels / 255" || fail "pixel values"
fi
out=$(run 1 inspect "$tmp/gz.h5") && grep -q VALID <<<"$out" && grep -q "label counts: 2 2 2" <<<"$out" &&
  echo "ok   inspect: valid, 2 rows per class" || fail "inspect: $out"
run 2 train --data "$tmp/gz.h5" --width 8 --depth 1 --global-batch 6 --steps 3 --threads 1 >/dev/null 2>&1 &&
  echo "ok   train --data on the import" || fail "train --data on the imported file"

expect2() {  # expect2 "<message>" <microddp args...>: exit 2, the message, no output file left
  local want="$1"; shift
  local o rc; o=$(run 2 "$@" 2>&1 >/dev/null); rc=$?
  if [ $rc -eq 2 ] && grep -qF -- "$want" <<<"$o" && [ ! -e "$tmp/bad.h5" ] && [ ! -e "$tmp/bad.h5.tmp" ]; then
    echo "ok   exit 2: $(grep -m1 error <<<"$o" | cut -c1-150)"
  else
    fail "want exit 2 and '$want' (no bad.h5), got $rc: $(head -3 <<<"$o")"
  fi
}
# imp2 "<message>" IMAGES LABELS: the import of that pair fails with the message.
imp2() { expect2 "$1" make-dataset --from-idx "$2" "$3" "$tmp/bad.h5" --classes 3; }
{ printf '\x12\x34'; tail -c +3 "$tmp/img.idx"; } > "$tmp/magic.idx"
imp2 "magic.idx: wrong magic 0x12340803: not an IDX file" "$tmp/magic.idx" "$tmp/lab.idx"
imp2 "wrong magic 0x00000801 for an IDX images file" "$tmp/lab.idx" "$tmp/img.idx"
imp2 "are IMAGES and LABELS swapped?" "$tmp/lab.idx.gz" "$tmp/img.idx.gz"
head -c 100 "$tmp/img.idx" > "$tmp/short.idx"
imp2 "short.idx: truncated: the header (magic 0x00000803, dimensions 6 4 5) promises 120 bytes of items after its 16 bytes, the file ends after 84" \
  "$tmp/short.idx" "$tmp/lab.idx"
gzip -c "$tmp/short.idx" > "$tmp/short.gz"
imp2 "short.gz (gzip-compressed): truncated" "$tmp/short.gz" "$tmp/lab.idx"
head -c $(($(stat -c %s "$tmp/img.idx.gz") - 12)) "$tmp/img.idx.gz" > "$tmp/cut.gz"  # the stream itself cut
imp2 "cut.gz (gzip-compressed): truncated" "$tmp/cut.gz" "$tmp/lab.idx"
{ cat "$tmp/lab.idx"; printf '\x00'; } > "$tmp/long.idx"
imp2 "long.idx: 1 extra bytes after the last of the 6 items" "$tmp/img.idx" "$tmp/long.idx"
{ printf "$(be32 0x801)$(be32 5)"; printf '\x00\x01\x02\x00\x01'; } > "$tmp/five.idx"
imp2 "holds 6 images but $tmp/five.idx holds 5 labels" "$tmp/img.idx" "$tmp/five.idx"
{ printf "$(be32 0x801)$(be32 6)"; printf '\x00\x01\x02\x07\x01\x02'; } > "$tmp/range.idx"
imp2 "range.idx: label 7 of item 3 is out of range: 3 classes means labels 0..2" "$tmp/img.idx" "$tmp/range.idx"
imp2 "--from-idx $tmp/none.idx: No such file or directory" "$tmp/none.idx" "$tmp/lab.idx"
expect2 "--samples excludes --from-idx" make-dataset --from-idx "$tmp/img.idx" "$tmp/lab.idx" "$tmp/bad.h5" --samples 5

# Headers that promise far more than the file holds: refused with "truncated", and memory stays
# bounded by the data present (plain: the file's size is checked before reading; gzip: read in
# pieces of at most 3 MiB), whatever the header says. Each runs with 1.5 GiB of address space
# (ulimit -v); what the header promises would take 1.6 GB to 2 TB.
lim() { ulimit -S -v 1572864; "$@"; ulimit -S -v unlimited; }  # soft limit: lifted again after
{ printf "$(be32 0x803)$(be32 1)$(be32 40000)$(be32 40000)"; head -c 784000 /dev/zero; } > "$tmp/huge1.idx"
{ printf "$(be32 0x801)$(be32 1)"; printf '\x00'; } > "$tmp/one.idx"
lim imp2 "huge1.idx: truncated: the header (magic 0x00000803, dimensions 1 40000 40000) promises 1600000000 bytes of items after its 16 bytes, the file ends after 784000" \
  "$tmp/huge1.idx" "$tmp/one.idx"
gzip -c "$tmp/huge1.idx" > "$tmp/huge1.gz"
lim imp2 "huge1.gz (gzip-compressed): truncated: the header (magic 0x00000803, dimensions 1 40000 40000) promises 1600000000 bytes of items after its 16 bytes, the decompressed data ends after 784000" \
  "$tmp/huge1.gz" "$tmp/one.idx"
{ printf "$(be32 0x803)$(be32 1000)$(be32 46340)$(be32 46340)"; head -c 100000 /dev/zero; } | gzip -c > "$tmp/huge1000.gz"
{ printf "$(be32 0x801)$(be32 1000)"; head -c 1000 /dev/zero; } > "$tmp/zeros1000.idx"
lim imp2 "huge1000.gz (gzip-compressed): truncated: the header (magic 0x00000803, dimensions 1000 46340 46340)" \
  "$tmp/huge1000.gz" "$tmp/zeros1000.idx"
{ printf "$(be32 0x803)$(be32 $((1 << 31)))$(be32 1)$(be32 1)"; head -c 3000 /dev/zero; } | gzip -c > "$tmp/many.gz"
{ printf "$(be32 0x801)$(be32 $((1 << 31)))"; head -c 3000 /dev/zero; } | gzip -c > "$tmp/manylab.gz"
lim imp2 "manylab.gz (gzip-compressed): truncated: the header (magic 0x00000801, dimensions 2147483648) promises 2147483648 bytes of items after its 8 bytes, the decompressed data ends after 3000" \
  "$tmp/many.gz" "$tmp/manylab.gz"
cli_finish
