#!/bin/sh
# The installed library, used the way C and C++ projects use it: the build is
# installed into a temporary prefix, then small programs (tests/consumers/) are
# built against that prefix and run:
#   - a C++-only CMake project (find_package(ggufq)), linking ggufq::ggufq and ggufq::ggufq_static;
#   - a C CMake project, the same two targets;
#   - cc $(pkg-config --cflags --libs ggufq), and the same with --static.
# Each prints the version and a dequantized Q8_0 block, compared exactly. Also
# checked: no compile flags in the exported targets or pkg-config --cflags,
# clean absolute paths in ggufq.pc, and `make uninstall` removing every file.
# Nothing is written outside the temporary directory (the install manifest
# included: the install script runs from a copy that writes it there).
# Run by ctest as:
#   sh install.sh BUILD_DIR SOURCE_DIR VERSION LIBDIR CC CXX GENERATOR SANITIZE CROSSCOMPILING
set -u
build=$1 src=$2 version=$3 libdir=$4 cc=$5 cxx=$6 generator=$7 sanitize=$8 cross=$9

skip() { echo "SKIP: $*"; exit 77; }
case "$cross" in 1|ON|TRUE|YES|on|true|yes) skip "cross-compiled build (the consumers would need the target's toolchain and emulator)";; esac
command -v cmake >/dev/null 2>&1 || skip "cmake not found"
command -v "$cxx" >/dev/null 2>&1 || skip "C++ compiler $cxx not found"
command -v pkg-config >/dev/null 2>&1 || skip "pkg-config not found"

FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ggufq-install.XXXXXX") || { echo "FAIL: mktemp"; exit 1; }
trap 'rm -rf "$tmp"' EXIT INT TERM
prefix=$tmp/prefix
expected="ggufq $version q8_0 -32 2 30"

# A sanitized library needs the sanitizer runtime in every program linking it.
flags=""
[ -n "$sanitize" ] && flags="-fsanitize=$sanitize"

# --- install (cmake --install BUILD --prefix PREFIX, manifest kept in $tmp) ---
sed 's|^file(WRITE ".*/\${CMAKE_INSTALL_MANIFEST}"|file(WRITE "'"$tmp"'/${CMAKE_INSTALL_MANIFEST}"|' \
    "$build/cmake_install.cmake" > "$tmp/cmake_install.cmake"
if grep 'file(WRITE' "$tmp/cmake_install.cmake" | grep -v -F "$tmp/" | grep -q .; then
    echo "FAIL: cannot redirect the install manifest of $build/cmake_install.cmake"; exit 1
fi
cmake -DCMAKE_INSTALL_PREFIX="$prefix" -P "$tmp/cmake_install.cmake" > "$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log"; echo "FAIL: install"; exit 1; }
for f in include/ggufq.h "$libdir/libggufq.a" "$libdir/libggufq.so" "$libdir/pkgconfig/ggufq.pc" \
         "$libdir/cmake/ggufq/ggufqConfig.cmake" share/doc/ggufq/LICENSE share/doc/ggufq/THIRD-PARTY.md; do
    [ -f "$prefix/$f" ] && echo "ok: installed $f" || fail "$f not installed"
done
if grep -q 'INTERFACE_COMPILE_\|INTERFACE_LINK_OPTIONS' "$prefix/$libdir/cmake/ggufq/"ggufqTargets*.cmake; then
    fail "the exported targets pass compile or link options to consumers:"
    grep 'INTERFACE_COMPILE_\|INTERFACE_LINK_OPTIONS' "$prefix/$libdir/cmake/ggufq/"ggufqTargets*.cmake
else
    echo "ok: no compile or link options in the exported targets"
fi

# OpenMP is gone (the library has its own pthread pool): nothing may pull its runtime in.
if command -v readelf >/dev/null 2>&1; then
    if readelf -d "$prefix/$libdir/libggufq.so" | grep -q 'NEEDED.*\(gomp\|libomp\|iomp\)'; then
        fail "libggufq.so needs an OpenMP runtime: $(readelf -d "$prefix/$libdir/libggufq.so" | grep NEEDED)"
    else
        echo "ok: libggufq.so needs no OpenMP runtime"
    fi
fi

# run NAME PROGRAM: runs it, compares its output with $expected.
run() {
    out=$("$2" 2>&1)
    if [ "$out" = "$expected" ]; then echo "ok: $1: $out"; else fail "$1: got '$out', expected '$expected'"; fi
}
# needs_shared NAME PROGRAM YES|NO: whether it loads libggufq.so.
needs_shared() {
    command -v readelf >/dev/null 2>&1 || return 0
    if readelf -d "$2" | grep -q 'NEEDED.*libggufq\.so'; then got=YES; else got=NO; fi
    [ "$got" = "$3" ] && echo "ok: $1: needs libggufq.so: $got" || fail "$1: needs libggufq.so: $got, expected $3"
}

# --- CMake consumers: C++ only, and C ---
for kind in cxx c; do
    if cmake -S "$src/tests/consumers/$kind" -B "$tmp/$kind" -G "$generator" -DCMAKE_BUILD_TYPE=Release \
         -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
         -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" \
         -DCMAKE_EXPORT_COMPILE_COMMANDS=ON > "$tmp/$kind.log" 2>&1 &&
       cmake --build "$tmp/$kind" >> "$tmp/$kind.log" 2>&1; then
        for link in shared static; do
            run "cmake $kind $link" "$tmp/$kind/consumer_$link"
        done
        # The consumers compile with their own flags, the include directory and nothing of ours.
        if grep -q -e '-pthread' -e 'openmp' -e '-D_GNU_SOURCE' "$tmp/$kind/compile_commands.json"; then
            fail "cmake $kind: compile flags leaked from ggufq:"; grep '"command"' "$tmp/$kind/compile_commands.json"
        else
            echo "ok: cmake $kind: no -pthread, OpenMP or _GNU_SOURCE in the consumer's compile commands"
        fi
        needs_shared "cmake $kind shared" "$tmp/$kind/consumer_shared" YES
        needs_shared "cmake $kind static" "$tmp/$kind/consumer_static" NO
    else
        cat "$tmp/$kind.log"; fail "cmake $kind consumer did not configure and build"
    fi
done

# --- pkg-config consumers ---
PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
export PKG_CONFIG_PATH
pc_prefix=$(pkg-config --variable=prefix ggufq)
pc_libdir=$(pkg-config --variable=libdir ggufq)
pc_cflags=$(pkg-config --cflags ggufq)
[ "$pc_prefix" = "$prefix" ] && echo "ok: ggufq.pc prefix=$pc_prefix" || fail "ggufq.pc prefix '$pc_prefix', expected '$prefix'"
[ "$pc_libdir" = "$prefix/$libdir" ] && echo "ok: ggufq.pc libdir=$pc_libdir" ||
    fail "ggufq.pc libdir '$pc_libdir', expected '$prefix/$libdir'"
[ "$(echo $pc_cflags)" = "-I$prefix/include" ] && echo "ok: pkg-config --cflags: $pc_cflags" ||
    fail "pkg-config --cflags '$pc_cflags', expected '-I$prefix/include' only"
# shellcheck disable=SC2046
if "$cc" $flags "$src/tests/consumers/consumer.c" -o "$tmp/pc_shared" $(pkg-config --cflags --libs ggufq) \
     > "$tmp/pc_shared.log" 2>&1; then
    LD_LIBRARY_PATH=$pc_libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} run "pkg-config shared" "$tmp/pc_shared"
    needs_shared "pkg-config shared" "$tmp/pc_shared" YES
else
    cat "$tmp/pc_shared.log"; fail "pkg-config shared consumer did not build"
fi
# The static library alone (-l:libggufq.a), with what pkg-config --static adds.
static_libs=$(pkg-config --static --libs ggufq | sed 's/-lggufq\b/-l:libggufq.a/')
if "$cc" $flags "$src/tests/consumers/consumer.c" -o "$tmp/pc_static" $(pkg-config --cflags ggufq) $static_libs \
     > "$tmp/pc_static.log" 2>&1; then
    run "pkg-config static" "$tmp/pc_static"
    needs_shared "pkg-config static" "$tmp/pc_static" NO
else
    cat "$tmp/pc_static.log"; fail "pkg-config --static consumer did not build"
fi

# --- make uninstall removes every installed file ---
if command -v make >/dev/null 2>&1; then
    make -s -C "$src" uninstall MANIFEST="$tmp/install_manifest.txt" > "$tmp/uninstall.log" 2>&1 ||
        { cat "$tmp/uninstall.log"; fail "make uninstall failed"; }
    left=$(find "$prefix" -type f -o -type l | head -5)
    [ -z "$left" ] && echo "ok: make uninstall removed every installed file" || fail "left after make uninstall: $left"
    for d in "$libdir/cmake/ggufq" share/doc/ggufq; do
        [ -d "$prefix/$d" ] && fail "make uninstall left the directory $d" || echo "ok: make uninstall removed $d/"
    done
else
    echo "make not found: make uninstall not checked"
fi

if [ "$FAILS" -ne 0 ]; then
    echo "$FAILS check(s) failed"
    exit 1
fi
echo "all checks passed"
