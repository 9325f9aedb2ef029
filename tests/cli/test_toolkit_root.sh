#!/usr/bin/env bash
# The toolkit's place where the binary names it (issue 38). A key holds the toolkit's include
# folders relative to its root (portable), but a binary may name toolkit files by their absolute
# path: -lineinfo's .file lines, -G's DWARF, a toolkit macro's __FILE__. Warmed with one root and
# looked up with another (a link to it, as /usr/local/cuda is to cuda-13.0), each program must get
# what an uncached compile with that root gives. Usage: test_toolkit_root.sh KJIT
set -u
kjit=$1
# shellcheck source=checks.sh
. "$(dirname "$0")/checks.sh"

real=$(realpath "${KJIT_CUDA_HOME:-${CUDA_HOME:-/usr/local/cuda}}")
# Toolkit A: this toolkit's libraries and a header tree of our own; toolkit B: a link to A.
mkdir -p "$work/tkA/include"
ln -s "$real/lib64" "$work/tkA/lib64"
ln -s "$work/tkA" "$work/tkB"
cat >"$work/tkA/include/kjit_tk.h" <<'H'
__device__ inline int tk_twice(int v) { return v * 2 + (v > 3 ? v : -v); }
__device__ inline const char* tk_where() { return __FILE__; }
H
cd "$work" || exit 1
cat >lines.cu <<'CU'
#include <kjit_tk.h>
extern "C" __global__ void lines(int* p) { p[threadIdx.x] = tk_twice(p[threadIdx.x + 1]); }
CU
# No word of this text names a file: only the toolkit's header does (as _CCCL_ASSERT's does).
cat >where.cu <<'CU'
#include <kjit_tk.h>
extern "C" __global__ void where(const char** p) { *p = tk_where(); }
CU

compile() {  # compile ROOT OUT FILE [options…]: one kjit compile with toolkit ROOT into folder OUT
  local tk=$1 out=$2 file=$3
  shift 3
  KJIT_CUDA_HOME=$work/$tk "$kjit" compile "$file" --arch sm_90 -o "$out" "$@" >"$work/out" 2>"$work/err"
}

for options in "-X -lineinfo" "-X -G"; do
  name="lines.cu $options"
  set -- $options
  check "$name: compiled with toolkit A" compile tkA a lines.cu "$@"
  check "$name: names A's header" grep -q "tkA/include/kjit_tk.h" a/lines.ptx
  check "$name: compiled again with A is a hit" compile tkA a2 lines.cu "$@"
  check "$name: … a hit" grep -q "^cache hit" "$work/out"
  check "$name: compiled with B (a link to A)" compile tkB b lines.cu "$@"
  check "$name: … names B's header, as an uncached compile does (was A's: a hit of A's entry)" \
    grep -q "tkB/include/kjit_tk.h" b/lines.ptx
  check "$name: … and not A's" sh -c "! grep -q 'tkA/include' b/lines.ptx"
  check "$name: uncached with B" compile tkB n lines.cu "$@" --no-cache
  check "$name: … the same PTX" cmp -s b/lines.ptx n/lines.ptx
  check "$name: B again is a hit" compile tkB b2 lines.cu "$@"
  check "$name: … a hit" grep -q "^cache hit" "$work/out"
  rm -rf a a2 b b2 n
done

# A toolkit header's __FILE__ in a program whose texts name no file: its key is portable (no root),
# so its binary, which holds the root, is not stored. Before, B was served A's binary.
export KJIT_CACHE_DIR=$work/where-cache
check "where.cu: compiled with A" compile tkA a where.cu
check "where.cu: … it holds A's path" grep -aq "tkA/include/kjit_tk.h" a/where.sm_90.cubin
check "where.cu: … and says it is not cached" grep -q "names the toolkit's files" "$work/err"
check "where.cu: compiled with B" compile tkB b where.cu
check "where.cu: … holds B's path (was A's: a hit)" grep -aq "tkB/include/kjit_tk.h" b/where.sm_90.cubin
check "where.cu: … not A's" sh -c "! grep -aq 'tkA/include' b/where.sm_90.cubin"
check "where.cu: nothing was stored" sh -c "KJIT_CUDA_HOME='$work/tkA' '$kjit' stats | grep -q '^entries: 0 '"
check "where.cu: … and the refusal is counted" sh -c \
  "KJIT_CUDA_HOME='$work/tkA' '$kjit' stats | grep -q '^not cached: 2 compiles (names file 2)'"

# Found by review: a program that can read no toolkit header names no toolkit file, whatever its
# options or strings. Its -lineinfo binary is the same under both roots (one key: a hit), and a
# string holding the toolkit's path is the program's own (stored). Before, both missed every time.
export KJIT_CACHE_DIR=$work/plain-cache
printf 'extern "C" __global__ void k(int* p) { p[threadIdx.x] = p[threadIdx.x + 1] * 2; }\n' >plain.cu
check "plain.cu -lineinfo: compiled with A" compile tkA a plain.cu -X -lineinfo
check "plain.cu -lineinfo: with B, a hit (the same binary)" compile tkB b plain.cu -X -lineinfo
check "… a hit" grep -q "^cache hit" "$work/out"
printf 'extern "C" __global__ void lit(const char** p) { *p = "%s/tkA/include/ holds the headers"; }\n' "$work" >lit.cu
check "lit.cu: compiled" compile tkA a lit.cu
check "… stored" sh -c "! grep -q 'not cached' '$work/err'"
check "lit.cu: again, a hit" compile tkA a lit.cu
check "… a hit" grep -q "^cache hit" "$work/out"

echo "toolkit root: $passed passed, $failed failed"
[ "$failed" = 0 ]
