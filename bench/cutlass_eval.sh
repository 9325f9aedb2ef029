#!/usr/bin/env bash
# CUTLASS's own NVRTC programs through kjit, side by side with `--no-cache` (issue 36; not for CI:
# it needs a CUTLASS checkout). Four programs, built from the checkout at run time:
#   thread_gemm    the NVRTC testbed's thread-level GEMM kernel (test/unit/nvrtc/kernel/thread/testbed_kernel.h)
#   half_epilogue  a half/float thread-level Mma with a LinearCombination epilogue
#   gett           the SM90 TMA warp-specialized GETT contraction of the NVRTC testbed (sm_90 only)
#   sgemm_1        CuTe's tutorial gemm_device (examples/cute/tutorial/sgemm_1.cu), one instantiation
# For each program and arch: wall time and peak memory of `kjit compile --no-cache` and of a cold
# miss through an empty cache (best of ROUNDS, alternated), then a warm hit in a fresh process (best
# of 5) with its stat() calls counted by strace, and whether the entry was stored.
# Then, for each program compiled for both archs, the sm_90 miss of a cache that holds its sm_80
# entry (it starts from that compile's closed resolution: docs/includes.md, "A closure used
# again"), beside sm_90's `--no-cache` (best of ROUNDS).
# Usage: bench/cutlass_eval.sh KJIT_BINARY CUTLASS_DIR [WORK_DIR] [ROUNDS]
set -euo pipefail
kjit=$(realpath "$1")
cutlass=$(realpath "$2")
work=${3:-$(mktemp -d)}
rounds=${4:-2}
mkdir -p "$work/src"
cd "$work"

cat >src/thread_gemm.cu <<'EOF'
#include "cutlass/gemm/thread/mma.h"
#include "cutlass/gemm/gemm.h"
#include "cutlass/layout/matrix.h"
#include "unit/nvrtc/kernel/thread/testbed_kernel.h"
EOF
thread_gemm_name='test::nvrtc::kernel::thread::testbed_kernel<cutlass::gemm::thread::Mma<cutlass::gemm::GemmShape<3, 4, 2>, float, cutlass::layout::ColumnMajor, float, cutlass::layout::RowMajor, float, cutlass::layout::ColumnMajor>>'

cat >src/half_epilogue.cu <<'EOF'
#include "cutlass/gemm/thread/mma.h"
#include "cutlass/epilogue/thread/linear_combination.h"
using Mma = cutlass::gemm::thread::Mma<cutlass::gemm::GemmShape<8, 8, 4>, cutlass::half_t, cutlass::layout::ColumnMajor,
                                       cutlass::half_t, cutlass::layout::RowMajor, float, cutlass::layout::ColumnMajor>;
using Epilogue = cutlass::epilogue::thread::LinearCombination<float, 4, float, float>;
extern "C" __global__ void mma_epilogue(float* D, const cutlass::half_t* A, const cutlass::half_t* B, const float* C) {
  using FragC = cutlass::Array<float, Mma::Shape::kMN>;
  FragC accum;
  Mma()(accum, *reinterpret_cast<const cutlass::Array<cutlass::half_t, Mma::Shape::kMK>*>(A),
        *reinterpret_cast<const cutlass::Array<cutlass::half_t, Mma::Shape::kKN>*>(B), *reinterpret_cast<const FragC*>(C));
  Epilogue epilogue(typename Epilogue::Params(1.5f, 0.5f));
  auto* out = reinterpret_cast<cutlass::Array<float, 4>*>(D);
  for (int i = 0; i < Mma::Shape::kMN / 4; ++i) {
    out[i] = epilogue(reinterpret_cast<const cutlass::Array<float, 4>*>(&accum)[i],
                      reinterpret_cast<const cutlass::Array<float, 4>*>(C)[i]);
  }
}
EOF

cat >src/gett.cu <<'EOF'
#include "kernel/thread/contraction.hpp"
using Operator = nvrtc::thread::ContractionKernel<cutlass::bfloat16_t, cutlass::bfloat16_t, cutlass::bfloat16_t,
  cute::Shape<cute::Shape<cute::_8, cute::_8>, cute::Shape<cute::_16, cute::_8>, cute::Shape<cute::_8, cute::_8>>,
  cute::Shape<cute::_1, cute::_2, cute::_1>, true, true, 10, 10, 10, 10>::Kernel;
extern "C" __global__ void global_entry(__grid_constant__ Operator::Params const params) {
  extern __shared__ char smem[];
  Operator op;
  op(params, smem);
}
EOF

# CuTe's tutorial kernel as the tutorial writes it (from the checkout), instantiated for its NT case.
{
  echo '#include <cute/tensor.hpp>'
  sed -n '/^template <class ProblemShape, class CtaTiler,/,/^}/p' "$cutlass/examples/cute/tutorial/sgemm_1.cu"
  cat <<'EOF'
using namespace cute;
using ProblemShape = decltype(make_shape(int(0), int(0), int(0)));
using CtaTiler = decltype(make_shape(Int<128>{}, Int<128>{}, Int<8>{}));
using StrideA = decltype(make_stride(Int<1>{}, int(0)));
using SmemA = decltype(make_layout(make_shape(Int<128>{}, Int<8>{})));
using ThreadsA = decltype(make_layout(make_shape(Int<32>{}, Int<8>{})));
using SmemC = decltype(make_layout(make_shape(Int<128>{}, Int<128>{})));
using ThreadsC = decltype(make_layout(make_shape(Int<16>{}, Int<16>{})));
EOF
} >src/sgemm_1.cu
sgemm_name='gemm_device<ProblemShape, CtaTiler, float, StrideA, SmemA, ThreadsA, float, StrideA, SmemA, ThreadsA, float, StrideA, SmemC, ThreadsC, float, float>'

ms() { echo "$(($(date +%s%N) / 1000000))"; }
# run_timed OUT_PREFIX ARGS...: kjit compile, its wall ms and peak KB into $OUT_PREFIX.{ms,kb}
run_timed() {
  local out=$1 start
  shift
  start=$(ms)
  /usr/bin/time -f "%M" -o "$out.kb" "$kjit" compile "$@" -o "$work/bin" >"$out.log" 2>&1 || {
    echo "FAILED: kjit compile $*" >&2
    tail -n 20 "$out.log" >&2
    return 1
  }
  echo $(($(ms) - start)) >"$out.ms"
}
best() { sort -n "$@" | head -n 1; }

printf '%-14s %-6s %8s %8s %8s %9s %9s %8s %7s %6s %s\n' program arch nocache_ms miss_ms over_pct nocache_MB miss_MB hit_ms headers stats stored
evaluate() {  # evaluate NAME ARCH ARGS...
  local name=$1 arch=$2 r
  shift 2
  local args=("$work/src/$name.cu" --arch "$arch" "$@")
  rm -f "$work"/t.*
  # A cache folder per round, renamed or removed at the end: one removed just before a miss made
  # it pay for the removal (bench/vendored_cccl.sh says why), which --no-cache never meets.
  rm -rf "$work/cache-$name-$arch" "$work/cache-$name-$arch".*  # (a failed run's too: a hit is no miss)
  for ((r = 0; r < rounds; r++)); do
    run_timed "$work/t.plain$r" "${args[@]}" --no-cache
    KJIT_CACHE_DIR="$work/cache-$name-$arch.$r" run_timed "$work/t.miss$r" "${args[@]}"
  done
  mv "$work/cache-$name-$arch.0" "$work/cache-$name-$arch"
  spent+=("$work/cache-$name-$arch".*)
  for r in 1 2 3 4 5; do
    KJIT_CACHE_DIR="$work/cache-$name-$arch" run_timed "$work/t.hit$r" "${args[@]}"
  done
  local stored headers stats
  stored=$(grep -c '^lookup: from disk' "$work/t.hit1.log" || true)
  headers=$(find "$work/cache-$name-$arch/programs/headers" -type f 2>/dev/null | wc -l)
  stats=$(KJIT_CACHE_DIR="$work/cache-$name-$arch" strace -f -qq -c -e trace=stat,lstat,newfstatat,statx \
    "$kjit" compile "${args[@]}" -o "$work/bin" 2>&1 >/dev/null | awk '$NF ~ /stat/ {n += $4} END {print n + 0}')
  local plain miss
  plain=$(best "$work"/t.plain*.ms)
  miss=$(best "$work"/t.miss*.ms)
  printf '%-14s %-6s %8d %8d %+7.1f%% %9.1f %9.1f %8d %7s %6s %s\n' "$name" "$arch" "$plain" "$miss" \
    "$(echo "100 * ($miss - $plain) / $plain" | bc -l)" "$(echo "$(best "$work"/t.plain*.kb) / 1024" | bc -l)" \
    "$(echo "$(best "$work"/t.miss*.kb) / 1024" | bc -l)" "$(best "$work"/t.hit*.ms)" "$headers" "$stats" \
    "$([ "$stored" = 1 ] && echo yes || echo NO)"
}

other_arch() {  # other_arch NAME ARGS...: the sm_90 miss from the sm_80 entry's closure
  local name=$1 r
  shift
  local args=("$work/src/$name.cu" "$@")
  rm -f "$work"/o.*
  rm -rf "$work/cache-other-$name".*  # a failed run's: cp -a would copy into it
  for ((r = 0; r < rounds; r++)); do
    run_timed "$work/o.plain$r" "${args[@]}" --arch sm_90 --no-cache
    cp -a "$work/cache-$name-sm_80" "$work/cache-other-$name.$r"
    KJIT_CACHE_DIR="$work/cache-other-$name.$r" run_timed "$work/o.miss$r" "${args[@]}" --arch sm_90
    spent+=("$work/cache-other-$name.$r")
  done
  local plain miss
  plain=$(best "$work"/o.plain*.ms)
  miss=$(best "$work"/o.miss*.ms)
  printf '%-14s %-6s %8d %8d %+7.1f%%  (the sm_80 entry'"'"'s closure)\n' "$name" sm_90 "$plain" "$miss" \
    "$(echo "100 * ($miss - $plain) / $plain" | bc -l)"
}

# CUTLASS's headers declare unannotated functions: its NVRTC testbed compiles with -default-device -w.
inc=(-I "$cutlass/include" -X-default-device -X-w)
spent=()  # the rounds' cache folders no later step uses: removed at the end
for arch in sm_80 sm_90; do
  evaluate thread_gemm "$arch" "${inc[@]}" -I "$cutlass/test" -X-std=c++17 --name-expr "$thread_gemm_name"
  evaluate half_epilogue "$arch" "${inc[@]}" -X-std=c++17
  evaluate sgemm_1 "$arch" "${inc[@]}" -X-std=c++17 --name-expr "$sgemm_name"
done
evaluate gett sm_90 "${inc[@]}" -I "$cutlass/test/unit/nvrtc" -X-std=c++17
other_arch thread_gemm "${inc[@]}" -I "$cutlass/test" -X-std=c++17 --name-expr "$thread_gemm_name"
other_arch half_epilogue "${inc[@]}" -X-std=c++17
other_arch sgemm_1 "${inc[@]}" -X-std=c++17 --name-expr "$sgemm_name"
rm -rf "${spent[@]}"
