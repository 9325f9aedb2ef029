// The demo's GPU half: each example kernel launched on the device and checked on the CPU.
#include "demo_gpu.hpp"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace demo {

namespace {

// A program is named by its path (examples/saxpy.cu, /abs/examples/saxpy.cu); found by file name.
const kjit::Program& find(const std::vector<kjit::Program>& programs, const char* name)
{
  for (const auto& program : programs) {
    if (std::filesystem::path(program.name).filename() == name) {
      return program;
    }
  }
  throw kjit::Error(std::string("example ") + name + " missing");
}

template <typename T>
bool check(const char* what, const std::vector<T>& got, const std::vector<T>& want, double tolerance)
{
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    wrong += std::fabs(static_cast<double>(got[i]) - static_cast<double>(want[i])) > tolerance;
  }
  std::printf("  %-16s %zu elements, %zu wrong: %s\n", what, got.size(), wrong, wrong == 0 ? "ok" : "FAILED");
  return wrong == 0;
}

// IEEE half <-> float, for the CPU side of half_axpy.
std::uint16_t to_half(float value)
{
  std::uint32_t bits;
  std::memcpy(&bits, &value, 4);
  const std::uint32_t sign = (bits >> 16) & 0x8000;
  const int exponent = static_cast<int>((bits >> 23) & 0xff) - 127 + 15;
  const std::uint32_t mantissa = bits & 0x7fffff;
  if (exponent <= 0) {
    return static_cast<std::uint16_t>(sign);
  }
  return static_cast<std::uint16_t>(sign | (exponent << 10) | (mantissa >> 13));
}

float from_half(std::uint16_t half)
{
  const std::uint32_t sign = (half & 0x8000u) << 16;
  const std::uint32_t exponent = (half >> 10) & 0x1f;
  const std::uint32_t mantissa = half & 0x3ff;
  const std::uint32_t bits = exponent == 0 ? sign : sign | ((exponent - 15 + 127) << 23) | (mantissa << 13);
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

template <typename T>
kjit::DeviceBuffer upload(const kjit::Context& context, const std::vector<T>& host)
{
  kjit::DeviceBuffer buffer(context, host.size() * sizeof(T));
  buffer.upload(host.data(), host.size() * sizeof(T));
  return buffer;
}

template <typename T>
std::vector<T> download(const kjit::DeviceBuffer& buffer, std::size_t n)
{
  std::vector<T> host(n);
  buffer.download(host.data(), n * sizeof(T));
  return host;
}

} // namespace

int launch_and_check(const std::vector<kjit::Program>& programs)
{
  const kjit::Context context = kjit::Context::current();
  std::printf("launch on %s (compute capability %d.%d):\n", context.device_name().c_str(),
              context.compute_capability() / 10, context.compute_capability() % 10);
  const int n = 1 << 16;
  const kjit::Dim3 grid((n + 255) / 256);
  const kjit::Dim3 block(256);
  int failures = 0;

  std::vector<float> x(n), y(n), want(n);
  for (int i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i % 1000) * 0.5f;
    y[i] = 1.0f;
    want[i] = 3.0f * x[i] + y[i];
  }
  {
    kjit::DeviceBuffer dx = upload(context, x), dy = upload(context, y);
    kjit::get_kernel(find(programs, "saxpy.cu"), "saxpy").launch({grid, block}, 3.0f, dx.pointer(), dy.pointer(), n);
    kjit::synchronize(context);
    failures += !check("saxpy", download<float>(dy, n), want, 1e-5);
  }
  {
    kjit::DeviceBuffer dx = upload(context, x);
    kjit::get_kernel(find(programs, "scale.cu"), "scale<float>").launch({grid, block}, dx.pointer(), 0.25f, n);
    kjit::synchronize(context);
    std::vector<float> scaled(n);
    for (int i = 0; i < n; ++i) {
      scaled[i] = x[i] * 0.25f;
    }
    failures += !check("scale<float>", download<float>(dx, n), scaled, 0.0);
  }
  {
    std::vector<double> xd(x.begin(), x.end()), scaled(n);
    for (int i = 0; i < n; ++i) {
      scaled[i] = xd[i] * 1.5;
    }
    kjit::DeviceBuffer dx = upload(context, xd);
    kjit::get_kernel(find(programs, "scale.cu"), "scale<double>").launch({grid, block}, dx.pointer(), 1.5, n);
    kjit::synchronize(context);
    failures += !check("scale<double>", download<double>(dx, n), scaled, 0.0);
  }
  {
    std::vector<std::uint16_t> hx(n), hy(n);
    std::vector<float> hwant(n);
    for (int i = 0; i < n; ++i) {
      hx[i] = to_half(static_cast<float>(i % 64));
      hy[i] = to_half(1.0f);
      hwant[i] = 2.0f * from_half(hx[i]) + 1.0f;
    }
    kjit::DeviceBuffer dx = upload(context, hx), dy = upload(context, hy);
    kjit::get_kernel(find(programs, "half_axpy.cu"), "half_axpy")
      .launch({grid, block}, to_half(2.0f), dx.pointer(), dy.pointer(), n);
    kjit::synchronize(context);
    const std::vector<std::uint16_t> got = download<std::uint16_t>(dy, n);
    std::vector<float> gotf(n);
    for (int i = 0; i < n; ++i) {
      gotf[i] = from_half(got[i]);
    }
    failures += !check("half_axpy", gotf, hwant, 0.0);
  }
  return failures;
}

} // namespace demo
