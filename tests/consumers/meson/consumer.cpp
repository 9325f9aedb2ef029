// Meson consumer: compiles and caches a kernel through kjit used as a subproject (C++17).
#include <kjit/kjit.hpp>

#include <cstdio>
#include <string>
#include <vector>

int main()
{
  try {
    kjit::Cache cache;
    const kjit::Program program{"consumer.cu", "extern \"C\" __global__ void consumer(int* p) { *p = 42; }\n",
                                {}, {}, {}};
    const auto first = cache.get(program, kjit::Arch::parse("sm_90"));
    const auto again = cache.get(program, kjit::Arch::parse("sm_90"));
    std::string why;
    if (!kjit::check_cubin(first->cubin, 90, why) || first != again) {
      std::fprintf(stderr, "consumer: bad result: %s\n", why.c_str());
      return 1;
    }
    // A batch compiles in kjit-worker processes: the subproject builds the worker with the library,
    // and libkjit finds it (before, it was not built: every batch compiled in-process, warning
    // "cannot start the compile worker").
    std::vector<std::string> lines;
    kjit::set_log_sink([&lines](std::string_view line) { lines.emplace_back(line); });
    std::vector<kjit::BatchItem> items;
    for (int i = 0; i < 2; ++i) {
      const std::string name = "batch" + std::to_string(i);
      items.push_back({kjit::Program{name + ".cu", "extern \"C\" __global__ void " + name + "(int* p) { *p = " +
                                                     std::to_string(i) + "; }\n", {}, {}, {}},
                       kjit::Arch::parse("sm_90")});
    }
    const auto results = cache.get_many(items);
    kjit::set_log_sink({});
    for (const auto& result : results) {
      if (!result.binary) {
        std::fprintf(stderr, "consumer: batch item failed: %s\n", result.message.c_str());
        return 1;
      }
    }
    for (const auto& line : lines) {
      if (line.find("compile worker") != std::string::npos) {
        std::fprintf(stderr, "consumer: the batch ran without its workers: %s\n", line.c_str());
        return 1;
      }
    }
    std::printf("meson consumer ok: kjit %s, %zu-byte cubin, %llu memory hit, a batch of %zu in workers\n",
                kjit::version(), first->cubin.size(), static_cast<unsigned long long>(cache.stats().memory_hits),
                results.size());
    return 0;
  } catch (const kjit::Error& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
}
