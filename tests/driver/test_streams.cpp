// kjit::Stream and kjit::Event against the fake driver (issue 39: launches took only a raw
// CUstream): made in their context, destroyed once (moves included), an application's stream
// wrapped and left alone, launches on them, events timing a stream's work, and the errors of
// handles used wrongly.
#include <boost/test/unit_test.hpp>

#include "../common/sample_kernels.hpp"
#include "../unit/fixture.hpp"
#include "fake_driver.hpp"

#include <kjit/stream.hpp>

#include <utility>

using kjit::test::fake;

namespace {

struct Streams : kjit::test::DriverFixture {
  kjit::Kernel saxpy(const kjit::Context& context)
  {
    kjit::Cache cache(kjit::current_config());
    const auto prepared = cache.prepare({"streams.cu", kjit::test::k_saxpy, {}, {}, {}}, kjit::Arch::parse("sm_90"));
    return context.load(prepared, *cache.get(prepared)).kernel("saxpy");
  }
};

const std::uint64_t k_x = 0x1122334455667788;

} // namespace

BOOST_FIXTURE_TEST_SUITE(streams, Streams)

BOOST_AUTO_TEST_CASE(a_stream_is_made_non_blocking_used_by_launches_and_destroyed_once)
{
  {
    const kjit::Context context = kjit::Context::primary(0);
    const kjit::Kernel kernel = saxpy(context);
    kjit::Stream stream(context);
    BOOST_TEST(fake().count("cuStreamCreate flags=1") == 1, fake().log());  // CU_STREAM_NON_BLOCKING
    BOOST_TEST(stream.handle() != nullptr);
    kjit::LaunchConfig config{{4}, {128}};
    config.stream = stream.handle();
    kernel.launch(config, 2.0f, k_x, k_x, 5);
    BOOST_TEST(fake().count("cuLaunchKernel saxpy grid=4x1x1 block=128x1x1 shared=0 stream=S") == 1, fake().log());
    stream.synchronize();
    BOOST_TEST(fake().count("cuStreamSynchronize") == 1);
    // Moved twice: one owner at a time, each stream destroyed once.
    void* const first = stream.handle();
    kjit::Stream moved(std::move(stream));
    BOOST_TEST(stream.handle() == nullptr);
    kjit::Stream assigned(context);
    assigned = std::move(moved);  // the stream `assigned` made goes now; `moved` holds nothing
    BOOST_TEST(fake().count("cuStreamDestroy") == 1, fake().log());
    BOOST_TEST(assigned.handle() == first);
    BOOST_TEST(moved.handle() == nullptr);
    BOOST_CHECK_THROW(stream.synchronize(), kjit::CudaError);  // moved from
    BOOST_CHECK_THROW(moved.synchronize(), kjit::CudaError);   // moved from by assignment
  }
  BOOST_TEST(fake().count("cuStreamDestroy") == 2, fake().log());  // the two made, each once
  check_clean();
}

BOOST_AUTO_TEST_CASE(an_applications_stream_is_wrapped_and_never_destroyed)
{
  {
    const kjit::Context context = kjit::Context::primary(0);
    void* raw = fake().create_stream();
    const kjit::Stream wrapped = kjit::Stream::wrap(context, raw);
    BOOST_TEST(wrapped.handle() == raw);
    wrapped.synchronize();
    BOOST_CHECK_THROW(kjit::Stream::wrap(context, nullptr), kjit::CudaError);
  }
  BOOST_TEST(fake().count("cuStreamDestroy") == 0, fake().log());
  check_clean();
}

BOOST_AUTO_TEST_CASE(events_time_a_streams_work)
{
  {
    const kjit::Context context = kjit::Context::primary(0);
    const kjit::Kernel kernel = saxpy(context);
    kjit::Stream stream(context);
    kjit::Event start(context);
    kjit::Event end(context);
    BOOST_CHECK_THROW(kjit::elapsed_ms(start, end), kjit::CudaError);  // never recorded
    start.record(stream);
    kjit::LaunchConfig config{{4}, {128}};
    config.stream = stream.handle();
    kernel.launch(config, 2.0f, k_x, k_x, 5);
    end.record(stream);
    const float ms = kjit::elapsed_ms(start, end);
    BOOST_TEST(ms >= 0.0f);
    BOOST_TEST(fake().count("cuEventSynchronize") == 2);  // the failed call waited for `end` too
    kjit::Event moved(std::move(end));
    BOOST_CHECK_THROW(end.record(stream), kjit::CudaError);  // moved from
    moved.record_default();
    kjit::Event assigned(context);
    assigned = std::move(start);  // the event `assigned` made goes now
    BOOST_TEST(fake().count("cuEventDestroy") == 1, fake().log());
    BOOST_CHECK_THROW(start.record(stream), kjit::CudaError);
    BOOST_CHECK_THROW(kjit::elapsed_ms(start, moved), kjit::CudaError);
    BOOST_TEST(kjit::elapsed_ms(assigned, moved) >= 0.0f);
  }
  BOOST_TEST(fake().count("cuEventCreate flags=0") == 3);
  BOOST_TEST(fake().count("cuEventDestroy") == 3, fake().log());
  check_clean();
}

BOOST_AUTO_TEST_CASE(an_event_recorded_on_another_contexts_stream_is_a_cuda_error)
{
  {
    const kjit::Context first = kjit::Context::primary(0);
    const kjit::Context second = kjit::Context::primary(1);
    kjit::Stream stream(second);
    kjit::Event event(first);
    BOOST_CHECK_THROW(event.record(stream), kjit::CudaError);
  }
  check_clean();
}

BOOST_AUTO_TEST_SUITE_END()
