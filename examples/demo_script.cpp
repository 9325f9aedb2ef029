// The demo's script part: TileScale built as one batch, a dispatch table chosen by a cost model.
#include "demo_script.hpp"

#include <cmath>
#include <cstdio>
#include <string>

namespace demo {

namespace {

const char* const k_tile = R"(
template <int BLOCK, int UNROLL>
__global__ void tile(float* p, int n)
{
  const int base = (blockIdx.x * BLOCK + threadIdx.x) * UNROLL;
  for (int u = 0; u < UNROLL; ++u) {
    if (base + u < n) {
      p[base + u] *= 2.0f;
    }
  }
}
)";

// Waves of blocks over 132 multiprocessors, each wave costing a fixed overhead plus its tile's work:
// small sizes (one wave whatever the tile) prefer small tiles, large sizes large ones.
double cost(const kjit::ScheduleInfo& schedule, const std::vector<std::uint64_t>& key)
{
  const double tile = std::stod(schedule.values[0].second) * std::stod(schedule.values[1].second);
  const double blocks = std::ceil(static_cast<double>(key[0]) / tile);
  return std::ceil(blocks / 132) * (tile / 64 + 4);
}

} // namespace

int show_script(kjit::Cache& cache, const std::string& worker)
{
  kjit::Script script;
  script.name = "TileScale";
  script.source = k_tile;
  script.space = {{"BLOCK", {"64", "128", "256"}}, {"UNROLL", {"1", "2"}}};
  script.name_expression = "tile<{BLOCK},{UNROLL}>";
  script.arch = kjit::Arch::parse("sm_90");
  try {
    kjit::BatchOptions batch;
    batch.worker_path = worker;
    kjit::BuiltScript built = script.build(cache, batch);
    std::printf("script %s: %zu schedules built as one batch for %s (scripts/%s/%.12s…/)\n", built.name().c_str(),
                built.schedules().size(), built.arch().str().c_str(), built.folder().c_str(), built.hash().c_str());
    for (const auto& s : built.schedules()) {
      std::printf("  %zu  %-12s -> programs/%.12s…\n", s.index, s.kernel.c_str(), s.program_key.c_str());
    }
    kjit::TuningOptions tuning;
    tuning.cost = cost;
    built.set_tuning(tuning);
    for (const std::uint64_t n : {1000ull, 20000ull, 100000ull, 50000000ull}) {
      built.dispatch({n});
    }
    std::printf("dispatch table (cost model, no GPU needed; %s):\n  %-10s choice\n",
                built.table_fingerprint().text().c_str(), "n");
    for (const auto& row : built.table()) {
      const auto& s = built.schedules()[row.choice];
      std::printf("  %-10llu %zu  %s\n", static_cast<unsigned long long>(row.key[0]), row.choice, s.kernel.c_str());
    }
    std::printf("\n");
    return 0;
  } catch (const kjit::Error& e) {
    std::fprintf(stderr, "script demo failed: %s\n", e.what());
    return 1;
  }
}

} // namespace demo
