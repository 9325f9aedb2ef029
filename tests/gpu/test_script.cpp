// On a GPU: a script's schedules timed for real (launch and wait, median of repeats), the fastest
// recorded in the dispatch table, and the dispatched kernel launched and checked.
#include <boost/test/unit_test.hpp>

#include <kjit/kjit.hpp>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

// REPS dependent multiply-adds per element: the schedule with the fewest is fastest by far.
const char* const k_busy = R"(
extern "C" __global__ void busy(float* out, int n)
{
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) {
    return;
  }
  float v = static_cast<float>(i % 7);
  for (int r = 0; r < REPS; ++r) {
    v = v * 0.5f + 1.0f;
  }
  out[i] = v;
}
)";

struct ScriptGpuFixture {
  ScriptGpuFixture()
  {
    char pattern[] = "/tmp/kjit-gpu-script-XXXXXX";
    dir = ::mkdtemp(pattern);
    config = kjit::current_config();
    config.cache_dir = dir + "/cache";
  }
  ~ScriptGpuFixture() { std::system(("rm -rf '" + dir + "'").c_str()); }
  std::string dir;
  kjit::Config config;
};

} // namespace

BOOST_FIXTURE_TEST_SUITE(gpu_script, ScriptGpuFixture)

BOOST_AUTO_TEST_CASE(real_schedules_are_timed_and_the_fastest_is_dispatched)
{
  kjit::Cache cache(config);
  const kjit::Context context = kjit::Context::primary(0);
  kjit::Script script;
  script.name = "BusyLoop";
  script.source = k_busy;
  script.space = {{"REPS", {"20000", "1", "2000"}}};
  // arch auto: this device's (config.arch aside).
  kjit::BuiltScript built = script.build(cache);
  BOOST_TEST_REQUIRE(built.schedules().size() == 3u);

  const int n = 1 << 20;
  kjit::DeviceBuffer out(context, n * sizeof(float));
  std::size_t timed_runs = 0;
  kjit::TuningOptions tuning;
  tuning.warmup = 1;
  tuning.repeat = 5;
  tuning.timer = [&](const kjit::TimingRun& run) {
    const kjit::Kernel kernel = built.kernel(run.schedule.index, context, "busy");
    const int size = static_cast<int>(run.key[0]);
    kjit::synchronize(context);
    const auto start = std::chrono::steady_clock::now();
    kernel.launch({{static_cast<unsigned>((size + 255) / 256), 1, 1}, {256, 1, 1}}, out.pointer(), size);
    kjit::synchronize(context);
    ++timed_runs;
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  };
  built.set_tuning(tuning);
  BOOST_TEST(built.choose({n}) == 1u);  // REPS=1
  BOOST_TEST(timed_runs == 3u * 6u);
  const auto table = built.table();
  BOOST_TEST_REQUIRE(table.size() == 1u);
  BOOST_TEST(table[0].how == "timed");
  BOOST_TEST_REQUIRE(table[0].measured.size() == 3u);
  BOOST_TEST(table[0].measured[0].first == 1u);
  BOOST_TEST(table[0].measured[2].first == 0u);  // REPS=20000 slowest
  BOOST_TEST(table[0].measured[0].second < table[0].measured[2].second);
  BOOST_TEST(built.table_fingerprint().gpu == context.device_name());
  BOOST_TEST(built.table_fingerprint().gpu != "none");

  // The dispatched kernel runs: REPS=1 gives v*0.5+1.
  const kjit::Kernel kernel = built.dispatch_kernel(context, {n}, "busy");
  kernel.launch({{static_cast<unsigned>(n / 256), 1, 1}, {256, 1, 1}}, out.pointer(), n);
  std::vector<float> host(n);
  out.download(host.data(), n * sizeof(float));
  BOOST_TEST(host[10] == static_cast<float>(10 % 7) * 0.5f + 1.0f);
  BOOST_TEST(timed_runs == 18u);  // dispatching the tuned key timed nothing more

  // A second process-worth of state (a fresh build) reads the table instead of timing again.
  kjit::BuiltScript again = script.build(cache);
  kjit::TuningOptions fail_if_timed;
  fail_if_timed.timer = [](const kjit::TimingRun&) -> double {
    BOOST_ERROR("timed again");
    return 0;
  };
  again.set_tuning(fail_if_timed);
  BOOST_TEST(again.choose({n - 5}) == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
