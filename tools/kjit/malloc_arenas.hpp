// One malloc arena for kjit's own processes (the CLI and the batch worker), not for hosts.
#pragma once

namespace kjit::cli {

// glibc gives each thread that allocates its own arena, and memory one arena frees is never used
// by another. On a miss the thread that resolves headers and makes the key beside NVRTC
// (cache/speculation.hpp) then keeps its own 35–40 MB resident for a vendored CCCL while NVRTC
// grows its arena to its peak; in one arena NVRTC reuses what that thread freed: a miss's peak
// memory over `--no-cache` goes from +47 to +8 MB (docs/benchmarks.md, "Real libraries"), at no
// measurable cost in time (a few threads, each mostly in NVRTC or in I/O). Left to a user who set
// MALLOC_ARENA_MAX or glibc.malloc.arena_max, and to other C libraries. Call before any thread.
void share_one_malloc_arena() noexcept;

} // namespace kjit::cli
