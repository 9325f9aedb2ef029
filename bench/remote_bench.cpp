// The remote tier's cost (issue 14): node B's cold start served by Redis vs compiling, and the
// latency of one remote lookup. Usage: kjit_bench_remote redis://HOST:PORT [PROGRAMS] [GETS]
// (bench/remote_bench.sh starts a redis-server on loopback and runs it; docs/remote.md has numbers).
#include "workload.hpp"

#include "remote/remote_tier.hpp"
#include "config/remote_url.hpp"
#include "util/stopwatch.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

// The p-th percentile of `ms` (sorted in place).
double percentile(std::vector<double>& ms, double p)
{
  std::sort(ms.begin(), ms.end());
  return ms.empty() ? 0.0 : ms[std::min(ms.size() - 1, static_cast<std::size_t>(p * static_cast<double>(ms.size())))];
}

kjit::util::Sha256 digest_of_hex(const std::string& hex)
{
  kjit::util::Sha256 digest{};
  for (std::size_t i = 0; i < digest.size(); ++i) {
    digest[i] = static_cast<std::uint8_t>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
  }
  return digest;
}

struct Pass {
  double total_ms = 0;
  std::vector<double> each_ms;
  int from_remote = 0;
  int compiled = 0;
};

// One node's cold start: every program looked up once in a fresh cache folder.
Pass cold_start(const std::string& tag, const std::string& url, int programs, std::vector<std::string>* keys)
{
  const bench::Folder folder(tag);
  kjit::Config config = bench::cache_config(folder.path());
  config.remote_cache = url;
  Pass pass;
  const kjit::util::Stopwatch total;
  {
    kjit::Cache cache(config);
    for (int i = 0; i < programs; ++i) {
      const kjit::Lookup found = cache.lookup(bench::kernel_program(i), kjit::Arch::parse("sm_80"));
      pass.each_ms.push_back(found.lookup_ms);
      pass.from_remote += found.source == kjit::Source::remote ? 1 : 0;
      pass.compiled += found.source == kjit::Source::compiled ? 1 : 0;
      if (keys != nullptr) {
        keys->push_back(cache.prepare(bench::kernel_program(i), kjit::Arch::parse("sm_80")).key());
      }
    }
  }  // the uploads are written before the cache is gone
  pass.total_ms = total.elapsed_ms();
  return pass;
}

} // namespace

int main(int argc, char** argv)
{
  if (argc < 2) {
    std::fprintf(stderr, "usage: kjit_bench_remote redis://HOST:PORT [PROGRAMS] [GETS]\n");
    return 2;
  }
  const std::string url = argv[1];
  const int programs = argc > 2 ? std::atoi(argv[2]) : 32;
  const int gets = argc > 3 ? std::atoi(argv[3]) : 2000;

  std::vector<std::string> keys;
  Pass a = cold_start("remote-a", url, programs, &keys);
  Pass b = cold_start("remote-b", url, programs, nullptr);
  Pass local = cold_start("remote-none", "", programs, nullptr);
  std::printf("cold start of %d programs (4 KiB saxpy sources, sm_80), each node a fresh cache folder:\n", programs);
  std::printf("  node A, compiles and uploads:    %8.1f ms (%d compiled)\n", a.total_ms, a.compiled);
  std::printf("  node B, served by the remote:    %8.1f ms (%d from remote), lookup p50 %.3f ms, p99 %.3f ms\n",
              b.total_ms, b.from_remote, percentile(b.each_ms, 0.5), percentile(b.each_ms, 0.99));
  std::printf("  no remote, compiles:             %8.1f ms (%d compiled), lookup p50 %.3f ms\n", local.total_ms,
              local.compiled, percentile(local.each_ms, 0.5));

  // The tier alone: a GET of one stored record and its transfer, no decoding.
  kjit::remote::RemoteTier tier(kjit::remote::parse_urls(url, "url"));
  std::vector<double> get_ms;
  std::size_t bytes = 0;
  for (int i = 0; i < gets; ++i) {
    const kjit::util::Stopwatch watch;
    const kjit::tier::TierAnswer answer = tier.get(digest_of_hex(keys[static_cast<std::size_t>(i) % keys.size()]));
    get_ms.push_back(watch.elapsed_ms());
    if (answer.kind != kjit::tier::TierAnswer::Kind::record) {
      std::fprintf(stderr, "a GET found no record: %s\n", answer.why.c_str());
      return 1;
    }
    bytes = answer.bytes.size();
  }
  std::printf("remote GET of one record (%zu bytes), %d times: p50 %.3f ms, p99 %.3f ms\n", bytes, gets,
              percentile(get_ms, 0.5), percentile(get_ms, 0.99));
  return b.from_remote == programs && a.compiled == programs ? 0 : 1;
}
