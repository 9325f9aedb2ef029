// The cubin reader: checks of the ELF structure, kernels' resources and parameter layouts.
#include <boost/test/unit_test.hpp>

#include <kjit/compile.hpp>
#include <kjit/cubin.hpp>
#include <kjit/error.hpp>

#include <cstdint>
#include <cstring>
#include <random>

namespace {

const std::string& sm80_cubin()
{
  static const std::string cubin =
    kjit::compile({"tiny.cu", "extern \"C\" __global__ void k(int* p) { *p = 1; }\n", {}, {}, {}},
                  kjit::Arch::parse("sm_80"))
      .cubin;
  return cubin;
}

// Kernels whose parameter lists cover every scalar size, pointers, structs by value,
// __grid_constant__ and templates; the same structs are declared on the host below.
const char* const k_layouts = R"(
struct Pair { double a; char b; };
struct alignas(16) Vec4 { float x, y, z, w; };
struct Big { int v[1000]; };
extern "C" __global__ void scalars(char c, short s, int i, long long l, float f, double d, bool b,
                                   unsigned char uc, int* out)
{
  out[0] = c + s + i + (int)l + (int)f + (int)d + b + uc;
}
extern "C" __global__ void aggregates(char c, Pair p, Vec4 v, const float* in, float* out)
{
  out[0] = c + p.a + p.b + v.x + v.w + in[1];
}
extern "C" __global__ void constant_big(const __grid_constant__ Big big, int* out) { out[0] = big.v[out[1]]; }
extern "C" __global__ void __launch_bounds__(256) shared_12(float* out)
{
  __shared__ float a[3];
  a[threadIdx.x % 3] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = a[(threadIdx.x + 1) % 3];
}
extern "C" __global__ void no_params() {}
template <typename T, int N> __global__ void templated(T x, const T* in, T* out)
{
  out[N] = x * in[N];
}
)";

struct Pair {
  double a;
  char b;
};
struct alignas(16) Vec4 {
  float x, y, z, w;
};
struct Big {
  int v[1000];
};

struct Declared {
  std::uint32_t size;
  std::uint32_t align;
};

// The layout the C++ rules give: each parameter at the next multiple of its alignment.
std::vector<kjit::KernelParam> expected_layout(const std::vector<Declared>& declared, std::uint32_t& total)
{
  std::vector<kjit::KernelParam> params;
  std::uint32_t offset = 0;
  for (std::uint32_t i = 0; i < declared.size(); ++i) {
    offset = (offset + declared[i].align - 1) / declared[i].align * declared[i].align;
    params.push_back({i, offset, declared[i].size});
    offset += declared[i].size;
  }
  total = offset;
  return params;
}

template <typename T>
Declared of()
{
  return {sizeof(T), alignof(T)};
}

void check_layout(const kjit::KernelInfo& kernel, const std::vector<Declared>& declared, const std::string& arch)
{
  std::uint32_t total = 0;
  const auto expected = expected_layout(declared, total);
  BOOST_TEST_CONTEXT(arch << " " << kernel.name)
  {
    BOOST_TEST_REQUIRE(kernel.params.size() == expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      BOOST_TEST(kernel.params[i].index == expected[i].index);
      BOOST_TEST(kernel.params[i].offset == expected[i].offset, "parameter " << i);
      BOOST_TEST(kernel.params[i].size == expected[i].size, "parameter " << i);
    }
    BOOST_TEST(kernel.param_bytes >= total);
    BOOST_TEST(kernel.param_bytes < total + 8);
  }
}

const kjit::KernelInfo& find(const std::vector<kjit::KernelInfo>& kernels, const std::string& name)
{
  for (const auto& kernel : kernels) {
    if (kernel.name == name) {
      return kernel;
    }
  }
  BOOST_FAIL("no kernel " + name);
  throw;  // unreachable
}

} // namespace

BOOST_AUTO_TEST_SUITE(cubin)

BOOST_AUTO_TEST_CASE(accepts_a_real_cubin_for_its_arch_only)
{
  std::string why;
  BOOST_TEST(kjit::check_cubin(sm80_cubin(), 80, why), why);
  BOOST_TEST(!kjit::check_cubin(sm80_cubin(), 90, why));
  BOOST_TEST(why.find("sm_80") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(rejects_garbage_and_truncation)
{
  std::string why;
  BOOST_TEST(!kjit::check_cubin("", 80, why));
  BOOST_TEST(!kjit::check_cubin(std::string(200, 'x'), 80, why));
  BOOST_TEST(why == "not an ELF file");

  std::string wrong_machine = sm80_cubin();
  wrong_machine[18] = 62;  // EM_X86_64
  BOOST_TEST(!kjit::check_cubin(wrong_machine, 80, why));
  BOOST_TEST(why.find("EM_CUDA") != std::string::npos);

  BOOST_TEST(!kjit::check_cubin(sm80_cubin().substr(0, sm80_cubin().size() / 2), 80, why));
  BOOST_TEST(why.find("truncated") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(every_truncation_is_rejected_by_the_check_and_the_reader)
{
  const std::string& cubin = sm80_cubin();
  for (std::size_t length = 0; length < cubin.size(); ++length) {
    const std::string_view cut(cubin.data(), length);
    std::string why;
    BOOST_TEST(!kjit::check_cubin(cut, 80, why), "accepted a cubin cut to " << length << " of " << cubin.size());
    BOOST_CHECK_THROW(kjit::read_kernels(cut), kjit::Error);
  }
}

BOOST_AUTO_TEST_CASE(offsets_that_wrap_around_are_rejected)
{
  std::string wrapped = sm80_cubin();
  const std::uint64_t huge = UINT64_MAX - 16;
  std::memcpy(wrapped.data() + 40, &huge, sizeof huge);  // e_shoff
  std::string why;
  BOOST_TEST(!kjit::check_cubin(wrapped, 80, why));

  wrapped = sm80_cubin();
  std::uint64_t section_offset = 0;
  std::memcpy(&section_offset, wrapped.data() + 40, sizeof section_offset);
  std::memcpy(wrapped.data() + section_offset + 64 + 24, &huge, sizeof huge);  // section 1's sh_offset
  BOOST_TEST(!kjit::check_cubin(wrapped, 80, why));
  BOOST_CHECK_THROW(kjit::read_kernels(wrapped), kjit::Error);
}

BOOST_AUTO_TEST_CASE(a_bad_null_section_or_a_symbol_past_its_section_is_rejected)
{
  const std::string& cubin = sm80_cubin();
  std::uint64_t section_offset = 0;
  std::memcpy(&section_offset, cubin.data() + 40, sizeof section_offset);
  std::uint16_t section_count = 0;
  std::memcpy(&section_count, cubin.data() + 60, sizeof section_count);
  std::string why;

  std::string bad = cubin;
  bad[section_offset + 4] = 1;  // section 0's sh_type: SHT_PROGBITS
  BOOST_TEST(!kjit::check_cubin(bad, 80, why));
  BOOST_TEST(why.find("section 0 is not the reserved null section") != std::string::npos, why);
  BOOST_CHECK_THROW(kjit::read_kernels(bad), kjit::Error);

  // The first symbol that names a section: its size now runs past that section.
  bad = cubin;
  bool changed = false;
  for (std::uint16_t i = 1; i < section_count && !changed; ++i) {
    const std::uint64_t header = section_offset + std::uint64_t(i) * 64;
    std::uint32_t type = 0;
    std::memcpy(&type, cubin.data() + header + 4, sizeof type);
    if (type != 2) {  // SHT_SYMTAB
      continue;
    }
    std::uint64_t offset = 0;
    std::uint64_t size = 0;
    std::memcpy(&offset, cubin.data() + header + 24, sizeof offset);
    std::memcpy(&size, cubin.data() + header + 32, sizeof size);
    for (std::uint64_t at = offset + 24; at < offset + size; at += 24) {
      std::uint16_t section = 0;
      std::memcpy(&section, cubin.data() + at + 6, sizeof section);
      if (section != 0 && section < section_count) {
        const std::uint64_t huge = UINT64_MAX / 2;
        std::memcpy(bad.data() + at + 16, &huge, sizeof huge);  // st_size
        changed = true;
        break;
      }
    }
  }
  BOOST_TEST_REQUIRE(changed);
  BOOST_TEST(!kjit::check_cubin(bad, 80, why));
  BOOST_TEST(why.find("lies outside its section") != std::string::npos, why);
}

BOOST_AUTO_TEST_CASE(corrupted_bytes_give_an_error_or_a_result_never_a_crash)
{
  const std::string& cubin = sm80_cubin();
  std::mt19937 random(12345);
  std::size_t rejected = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string bad = cubin;
    for (int flips = 0; flips < 4; ++flips) {
      bad[random() % bad.size()] = static_cast<char>(random());
    }
    try {
      for (const auto& kernel : kjit::read_kernels(bad)) {
        BOOST_TEST(kernel.params.size() <= 4096u);
      }
      kjit::cubin_functions(bad);
    } catch (const kjit::Error&) {
      ++rejected;
    }
  }
  BOOST_TEST(rejected > 0u);
}

BOOST_AUTO_TEST_CASE(parameter_layouts_match_the_source_on_every_arch)
{
  for (const char* arch : {"sm_80", "sm_90", "sm_120"}) {
    kjit::Program program{"layouts.cu", k_layouts, {}, {}, {"templated<double, 3>", "templated<short, 1>"}};
    const kjit::Binary binary = kjit::compile(program, kjit::Arch::parse(arch));
    const auto kernels = binary.kernels();
    BOOST_TEST(kernels.size() == 7u);
    check_layout(find(kernels, "scalars"),
                 {of<char>(), of<short>(), of<int>(), of<long long>(), of<float>(), of<double>(), of<bool>(),
                  of<unsigned char>(), of<int*>()},
                 arch);
    check_layout(find(kernels, "aggregates"), {of<char>(), of<Pair>(), of<Vec4>(), of<float*>(), of<float*>()}, arch);
    check_layout(find(kernels, "constant_big"), {of<Big>(), of<int*>()}, arch);
    check_layout(find(kernels, "shared_12"), {of<float*>()}, arch);
    check_layout(find(kernels, "no_params"), {}, arch);
    const auto as_double = binary.kernel("templated<double, 3>");
    BOOST_TEST_REQUIRE(as_double.has_value());
    BOOST_TEST(as_double->name == binary.lowered_name("templated<double, 3>"));
    check_layout(*as_double, {of<double>(), of<double*>(), of<double*>()}, arch);
    const auto as_short = binary.kernel(binary.lowered_name("templated<short, 1>"));
    BOOST_TEST_REQUIRE(as_short.has_value());
    check_layout(*as_short, {of<short>(), of<short*>(), of<short*>()}, arch);
    BOOST_TEST(!binary.kernel("missing").has_value());
  }
}

BOOST_AUTO_TEST_CASE(resources_of_each_kernel)
{
  for (const char* arch : {"sm_80", "sm_90", "sm_120"}) {
    kjit::Program program{"layouts.cu", k_layouts, {}, {}, {}};
    const auto kernels = kjit::compile(program, kjit::Arch::parse(arch)).kernels();
    BOOST_TEST_CONTEXT(arch)
    {
      const auto& shared = find(kernels, "shared_12");
      BOOST_TEST(shared.static_shared_bytes == 12u);
      BOOST_TEST(shared.max_threads == 256u);
      BOOST_TEST(shared.registers > 0);
      BOOST_TEST(shared.registers <= 255);
      const auto& none = find(kernels, "no_params");
      BOOST_TEST(none.static_shared_bytes == 0u);
      BOOST_TEST(none.max_threads == 0u);
      BOOST_TEST(none.local_bytes == 0u);
    }
  }
}

BOOST_AUTO_TEST_CASE(functions_list_kernels_and_called_helpers)
{
  const char* source = R"(
__device__ __noinline__ int helper(int x) { return x * 3 + 1; }
extern "C" __global__ void caller(int* p) { p[0] = helper(p[1]); }
)";
  const kjit::Binary binary = kjit::compile({"calls.cu", source, {}, {}, {}}, kjit::Arch::parse("sm_80"));
  const auto functions = kjit::cubin_functions(binary.cubin);
  BOOST_TEST((std::find(functions.begin(), functions.end(), "caller") != functions.end()));
  BOOST_TEST(functions.size() == 2u);
  BOOST_TEST(binary.kernels().size() == 1u);
  BOOST_TEST(kjit::compile({"calls.cu", source, {}, {}, {}}, kjit::Arch::parse("compute_80")).kernels().empty());
}

BOOST_AUTO_TEST_SUITE_END()
