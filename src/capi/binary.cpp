// kjit_binary_*: a Binary's artifacts and its kernels' resources (read from the cubin), for C.
#include "capi/handles.hpp"
#include "capi/status.hpp"

#include <algorithm>
#include <optional>
#include <string>

namespace {

// The cubin's kernels as C views, read once per handle (Binary::kernels parses the ELF each call).
const std::vector<kjit_kernel_view>& kernels_of(const kjit_binary& handle)
{
  std::lock_guard lock(handle.kernels_mutex);
  if (!handle.kernels_read) {
    std::vector<kjit_kernel_view> views;
    for (kjit::KernelInfo& info : handle.binary->kernels()) {
      kjit_kernel_view view{std::move(info), {}};
      for (const kjit::KernelParam& param : view.info.params) {
        view.params.push_back(kjit_kernel_param{param.index, param.offset, param.size});
      }
      views.push_back(std::move(view));
    }
    handle.kernels = std::move(views);
    handle.kernels_read = true;
  }
  return handle.kernels;
}

void describe(const kjit_kernel_view& view, kjit_kernel_info& out)
{
  const kjit::KernelInfo& info = view.info;
  out.name = info.name.c_str();
  out.registers = info.registers;
  out.static_shared_bytes = info.static_shared_bytes;
  out.local_bytes = info.local_bytes;
  out.const_bytes = info.const_bytes;
  out.max_threads = info.max_threads;
  out.param_bytes = info.param_bytes;
  out.max_stack_bytes = info.max_stack_bytes;
  out.param_count = view.params.size();
  out.params = view.params.data();
}

} // namespace

extern "C" {

void kjit_binary_destroy(kjit_binary* binary)
{
  delete binary;
}

kjit_status kjit_binary_arch(const kjit_binary* binary, const char** arch)
{
  KJIT_CAPI_REQUIRE(binary);
  KJIT_CAPI_REQUIRE(arch);
  *arch = binary->binary->arch.c_str();
  return KJIT_OK;
}

kjit_status kjit_binary_cubin(const kjit_binary* binary, const void** data, size_t* size)
{
  KJIT_CAPI_REQUIRE(binary);
  KJIT_CAPI_REQUIRE(data);
  KJIT_CAPI_REQUIRE(size);
  *data = binary->binary->cubin.data();
  *size = binary->binary->cubin.size();
  return KJIT_OK;
}

kjit_status kjit_binary_ptx(const kjit_binary* binary, const char** text, size_t* size)
{
  KJIT_CAPI_REQUIRE(binary);
  KJIT_CAPI_REQUIRE(text);
  *text = binary->binary->ptx.c_str();
  if (size != nullptr) {
    *size = binary->binary->ptx.size();
  }
  return KJIT_OK;
}

kjit_status kjit_binary_log(const kjit_binary* binary, const char** text)
{
  KJIT_CAPI_REQUIRE(binary);
  KJIT_CAPI_REQUIRE(text);
  *text = binary->binary->log.c_str();
  return KJIT_OK;
}

kjit_status kjit_binary_lowered_name(const kjit_binary* binary, const char* expression, const char** lowered)
{
  KJIT_CAPI_REQUIRE(binary);
  KJIT_CAPI_REQUIRE(expression);
  KJIT_CAPI_REQUIRE(lowered);
  // Binary::lowered_name's miss is a plain kjit::Error; a C caller gets it typed, as NOT_FOUND.
  const auto& names = binary->binary->lowered_names;
  const auto found = std::find_if(names.begin(), names.end(), [&](const auto& pair) { return pair.first == expression; });
  if (found == names.end()) {
    return kjit::capi::guarded([&] {
      return kjit::capi::fail(KJIT_ERROR_NOT_FOUND, ("kjit_binary_lowered_name: '" + std::string(expression) +
                                                     "' is not a name expression of this binary").c_str());
    });
  }
  *lowered = found->second.c_str();
  return KJIT_OK;
}

kjit_status kjit_binary_lowered_name_count(const kjit_binary* binary, size_t* count)
{
  KJIT_CAPI_REQUIRE(binary);
  KJIT_CAPI_REQUIRE(count);
  *count = binary->binary->lowered_names.size();
  return KJIT_OK;
}

kjit_status kjit_binary_lowered_name_at(const kjit_binary* binary, size_t index, const char** expression,
                                        const char** lowered)
{
  KJIT_CAPI_REQUIRE(binary);
  KJIT_CAPI_REQUIRE(expression);
  KJIT_CAPI_REQUIRE(lowered);
  const auto& names = binary->binary->lowered_names;
  if (index >= names.size()) {
    return kjit::capi::fail(KJIT_ERROR_INVALID_ARGUMENT, "kjit_binary_lowered_name_at: index out of range");
  }
  *expression = names[index].first.c_str();
  *lowered = names[index].second.c_str();
  return KJIT_OK;
}

kjit_status kjit_binary_kernel_count(const kjit_binary* binary, size_t* count)
{
  KJIT_CAPI_REQUIRE(binary);
  KJIT_CAPI_REQUIRE(count);
  return kjit::capi::guarded([&] { *count = kernels_of(*binary).size(); });
}

kjit_status kjit_binary_kernel_at(const kjit_binary* binary, size_t index, kjit_kernel_info* info)
{
  KJIT_CAPI_REQUIRE(binary);
  KJIT_CAPI_REQUIRE(info);
  return kjit::capi::guarded([&] {
    const auto& kernels = kernels_of(*binary);
    if (index >= kernels.size()) {
      return kjit::capi::fail(KJIT_ERROR_INVALID_ARGUMENT, "kjit_binary_kernel_at: index out of range");
    }
    describe(kernels[index], *info);
    return KJIT_OK;
  });
}

kjit_status kjit_binary_find_kernel(const kjit_binary* binary, const char* name, kjit_kernel_info* info)
{
  KJIT_CAPI_REQUIRE(binary);
  KJIT_CAPI_REQUIRE(name);
  KJIT_CAPI_REQUIRE(info);
  return kjit::capi::guarded([&] {
    // Binary::kernel resolves a name expression or a lowered name; the view of the same kernel
    // gives the pointers that live as long as the handle.
    const std::optional<kjit::KernelInfo> found = binary->binary->kernel(name);
    const auto& kernels = kernels_of(*binary);
    const auto view = found ? std::find_if(kernels.begin(), kernels.end(),
                                           [&](const kjit_kernel_view& v) { return v.info.name == found->name; })
                            : kernels.end();
    if (view == kernels.end()) {
      return kjit::capi::fail(KJIT_ERROR_NOT_FOUND, ("kjit_binary_find_kernel: no kernel '" + std::string(name) +
                                                     "' in this binary").c_str());
    }
    describe(*view, *info);
    return KJIT_OK;
  });
}

} // extern "C"
