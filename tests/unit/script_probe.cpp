// A separate process for the script tests: builds the probe script in CACHE_DIR and chooses a
// schedule for SIZE with a deterministic cost function (the table may come from another process).
// Usage: script_probe CACHE_DIR GPU SIZE [--sleep-ms N] [--include DIR] [--option OPTION]
//                     [--barrier DIR --parties N]
//   GPU: the fingerprint's gpu field ("-": this machine's).
//   --sleep-ms N: each cost call sleeps N ms (widens the window in which tuners overlap).
//   --include DIR: the source includes "probe.cuh" from the folder DIR (-I) and an in-memory
//     "probe_mem.cuh" (a script whose programs' keys hold a disk header).
//   --option OPTION: one more compile option (e.g. -lineinfo).
//   --barrier DIR --parties N: once the script is built, waits (at most 60 s) until N probes have
//     reached this point (each leaves a file in DIR), then chooses: the tuners start together.
// Prints "choice: N", "cost_calls: N" and "hash: HEX".
#include <kjit/kjit.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <unistd.h>

int main(int argc, char** argv)
{
  if (argc < 4) {
    std::fprintf(stderr, "usage: script_probe CACHE_DIR GPU SIZE [--sleep-ms N]\n");
    return 2;
  }
  int sleep_ms = 0;
  std::string include;
  std::string option;
  std::string barrier;
  std::size_t parties = 0;
  for (int i = 4; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--sleep-ms") == 0) {
      sleep_ms = std::atoi(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--option") == 0) {
      option = argv[i + 1];
    } else if (std::strcmp(argv[i], "--include") == 0) {
      include = argv[i + 1];
    } else if (std::strcmp(argv[i], "--barrier") == 0) {
      barrier = argv[i + 1];
    } else if (std::strcmp(argv[i], "--parties") == 0) {
      parties = std::strtoul(argv[i + 1], nullptr, 10);
    }
  }
  try {
    kjit::Config config = kjit::current_config();
    config.cache_dir = argv[1];
    kjit::Cache cache(config);
    kjit::Script script;
    script.name = "ProbeScript";
    script.source = "extern \"C\" __global__ void probe(int* p) { p[threadIdx.x] = BLOCK; }\n";
    script.space = {{"BLOCK", {"32", "64", "128"}}};
    script.arch = kjit::Arch::parse("sm_80");
    if (!include.empty()) {
      script.source = "#include \"probe.cuh\"\n#include \"probe_mem.cuh\"\n" + script.source;
      script.options = {"-I" + include};
      script.headers = {{"probe_mem.cuh", "#define PROBE_MEM 1\n"}};
    }
    if (!option.empty()) {
      script.options.push_back(option);
    }
    kjit::BatchOptions batch;
    if (const char* worker = std::getenv("KJIT_TEST_WORKER")) {
      batch.worker_path = worker;
    }
    kjit::BuiltScript built = script.build(cache, batch);
    int cost_calls = 0;
    kjit::TuningOptions tuning;
    tuning.fingerprint = kjit::current_fingerprint(built.arch());
    if (std::strcmp(argv[2], "-") != 0) {
      tuning.fingerprint.gpu = argv[2];
    }
    // The schedule whose BLOCK is nearest to key / 8 costs least.
    tuning.cost = [&](const kjit::ScheduleInfo& s, const std::vector<std::uint64_t>& key) {
      ++cost_calls;
      std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
      const double block = std::stod(s.values[0].second);
      const double want = static_cast<double>(key[0]) / 8;
      return block > want ? block - want : want - block;
    };
    built.set_tuning(tuning);
    if (!barrier.empty()) {
      std::ofstream(barrier + "/" + std::to_string(::getpid())) << "here\n";
      const auto arrived = [&] {
        const std::filesystem::directory_iterator files(barrier);
        return static_cast<std::size_t>(std::distance(begin(files), end(files)));
      };
      for (int i = 0; i < 6000 && arrived() < parties; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    const std::size_t choice = built.choose({std::strtoull(argv[3], nullptr, 10)});
    std::printf("choice: %zu\ncost_calls: %d\nhash: %s\n", choice, cost_calls, built.hash().c_str());
    return 0;
  } catch (const kjit::Error& e) {
    std::fprintf(stderr, "script_probe: %s\n", e.what());
    return 1;
  }
}
