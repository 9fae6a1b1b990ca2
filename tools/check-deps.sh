#!/bin/sh
# check-deps.sh OBJDIR [PREFIX...] — no call loops between source files.
#
# Reads the object files under OBJDIR (e.g. build/CMakeFiles/ggufq_obj.dir)
# with nm: file A calls file B when A needs a symbol B defines. Prints that
# call graph (A -> B, one edge a line) for the files whose path under OBJDIR
# starts with one of the PREFIXes (default: all), and fails when the graph has
# a loop (tsort finds them: A -> B -> ... -> A). Data symbols count as calls.
# Used by ctest (deps_no_loops: the library's and the program's files) and by hand:
#   sh tools/check-deps.sh build/CMakeFiles/ggufq_obj.dir src/requant
set -u
OBJDIR=${1:?usage: check-deps.sh OBJDIR [PREFIX...]}
shift
NM=${NM:-nm}   # a cross build passes its own (CMAKE_NM)
command -v "$NM" >/dev/null 2>&1 || { echo "skip: $NM not found"; exit 0; }
command -v tsort >/dev/null 2>&1 || { echo "skip: tsort not found"; exit 0; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# name of each object: its source path (src/requant/run.c)
find "$OBJDIR" -name '*.o' | sort | while read -r o; do
    f=${o#"$OBJDIR"/}
    f=${f%.o}
    keep=$#
    [ $# -eq 0 ] && keep=1 || keep=0
    for p in "$@"; do case $f in "$p"*) keep=1 ;; esac; done
    [ "$keep" -eq 1 ] || continue
    "$NM" --defined-only -g "$o" | awk -v f="$f" 'NF == 3 { print $3, f }' >>"$tmp/defs"
    "$NM" -u "$o" | awk -v f="$f" '{ print $NF, f }' >>"$tmp/uses"
done
[ -s "$tmp/defs" ] || { echo "FAIL: no object files under $OBJDIR for: $*"; exit 1; }
sort -k1,1 "$tmp/defs" >"$tmp/defs.s"
sort -k1,1 "$tmp/uses" >"$tmp/uses.s"
# symbol, user, definer -> "user definer"
join "$tmp/uses.s" "$tmp/defs.s" | awk '$2 != $3 { print $2, $3 }' | sort -u >"$tmp/edges"
sed 's/ / -> /' "$tmp/edges"
if ! tsort "$tmp/edges" >/dev/null 2>"$tmp/loops"; then
    echo "FAIL: files that call each other in a loop:"
    cat "$tmp/loops"
    exit 1
fi
echo "ok: no call loops"
