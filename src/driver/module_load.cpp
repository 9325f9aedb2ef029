// Loading modules: a Program's cached binary, any Binary, or an image (cubin, fatbin, PTX, a file),
// once per context and content, with JIT options for what the driver compiles.
#include "driver/image.hpp"
#include "driver/module_state.hpp"
#include "options/option_table.hpp"

#include "util/file.hpp"
#include "util/hash.hpp"

#include <kjit/config.hpp>
#include <kjit/error.hpp>

#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cstring>

namespace kjit {

struct Context::LoadRequest {
  std::string key;         // the module cache's key in this context
  std::string_view bytes;  // the image, classified and checked only when not loaded yet
  std::string image_name;  // for ImageError
  LoadOptions options;
  std::vector<std::pair<std::string, std::string>> lowered_names;
};

namespace {

std::string device_text(int device)
{
  return "device " + std::to_string(device);
}

// The key of an image without a cache key: its content, lowered names, name and JIT settings.
std::string content_key(std::string_view bytes, const LoadOptions& options,
                        const std::vector<std::pair<std::string, std::string>>& lowered_names)
{
  // PTX with or without its terminating NUL is the same image; a cubin or fatbin is taken byte for
  // byte (one without its last bytes, zeros as an ELF header's last fields are, is truncated).
  if (!driver::is_binary_image(bytes)) {
    while (!bytes.empty() && bytes.back() == '\0') {
      bytes.remove_suffix(1);
    }
  }
  util::Sha256Hasher hasher;
  hasher.update(bytes);
  for (const auto& [expression, lowered] : lowered_names) {
    hasher.update(std::string_view(expression.c_str(), expression.size() + 1));
    hasher.update(std::string_view(lowered.c_str(), lowered.size() + 1));
  }
  // The name's length first: "foo maxrregcount=32" with no settings must not meet "foo" with max_registers=32.
  return "image:" + util::to_hex(hasher.finish()) + ":" + std::to_string(options.name.size()) + ":" + options.name +
         driver::settings_text(options);
}

// -maxrregcount=N's N (the option's value, or the next option for the two-word form).
int register_limit(const std::string& value, const std::string& option)
{
  int limit = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), limit);
  if (error != std::errc{} || end != value.data() + value.size() || limit <= 0) {
    throw OptionError("'" + option + "': -maxrregcount takes a positive number of registers");
  }
  return limit;
}

} // namespace

LoadOptions load_options_of(const std::vector<std::string>& options)
{
  LoadOptions load;
  for (std::size_t i = 0; i < options.size(); ++i) {
    const std::string& option = options[i];
    const std::size_t equals = option.find('=');
    if (options::has(option, options::max_registers)) {
      if (equals != std::string::npos) {
        load.max_registers = register_limit(option.substr(equals + 1), option);
      } else if (i + 1 < options.size()) {
        ++i;
        load.max_registers = register_limit(options[i], option + " " + options[i]);
      } else {
        throw OptionError("'" + option + "' lacks its number of registers");
      }
    } else if (options::has(option, options::line_info)) {
      load.line_info = true;
    } else if (options::has(option, options::device_debug)) {
      load.debug = true;
    }
  }
  return load;
}

Module Context::load(const PreparedProgram& prepared, const Binary& binary) const
{
  const bool use_ptx = binary.cubin.empty() || (current_config().force_ptx && !binary.ptx.empty());
  LoadRequest request;
  request.options = load_options_of(prepared.program().options);
  request.options.name = prepared.program().name;
  request.bytes = use_ptx ? std::string_view(binary.ptx) : std::string_view(binary.cubin);
  request.image_name = request.options.name + " (" + binary.arch + ")";
  request.lowered_names = binary.lowered_names;  // before the key, which holds them
  if (prepared.m_from_disk || prepared.m_provisional || !prepared.m_made.value) {
    // get(prepared) returns the binary of the headers (and working directory) now, whose key is
    // not prepared.key() after an edit: keyed by the image, or the old binary's module is found.
    // So is a PreparedProgram prepare() did not make (default-constructed, moved from): its key
    // names no binary (every default one has the same), and the first binary's module was found.
    request.key = content_key(request.bytes, request.options, request.lowered_names);
  } else {
    // The prepared key names one binary (source, options, in-memory headers, toolchain), the
    // name expressions and settings included: no hash of the image on each call, which cost
    // ≈ 0.5 ms for a 758 KB cubin (once per launch where a host loads before each).
    request.key = prepared.key() + (use_ptx ? ":ptx" : ":cubin");
  }
  return load_request(request);
}

Module Context::load(const Binary& binary, const LoadOptions& options) const
{
  const bool use_ptx = binary.cubin.empty() || (current_config().force_ptx && !binary.ptx.empty());
  const std::string name = options.name.empty() ? "a " + binary.arch + " binary" : options.name;
  if (use_ptx && binary.ptx.empty()) {
    throw ImageError(name + " has neither a cubin nor PTX to load", name);
  }
  LoadRequest request;
  request.options = options;
  request.options.name = name;
  request.bytes = use_ptx ? std::string_view(binary.ptx) : std::string_view(binary.cubin);
  request.image_name = name;
  request.lowered_names = binary.lowered_names;
  request.key = content_key(request.bytes, request.options, request.lowered_names);
  return load_request(request);
}

Module Context::load_image(std::string_view image, const LoadOptions& options) const
{
  LoadRequest request;
  request.options = options;
  if (request.options.name.empty()) {
    request.options.name = "an image";
  }
  request.bytes = image;
  request.image_name = request.options.name;
  request.key = content_key(request.bytes, request.options, request.lowered_names);
  return load_request(request);
}

Module Context::load_file(const std::string& path, const LoadOptions& options) const
{
  // stat first: opening a FIFO would block, and /dev/zero reads without end.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw ImageError("cannot read " + path + ": " + std::strerror(errno), path);
  }
  if (!S_ISREG(st.st_mode)) {
    throw ImageError(path + " is not a regular file", path);
  }
  std::error_code error;
  const auto bytes = util::read_file(path, error);
  if (!bytes) {
    throw ImageError("cannot read " + path + ": " + error.message(), path);
  }
  LoadOptions named = options;
  if (named.name.empty()) {
    named.name = path;
  }
  return load_image(*bytes, named);
}

Module Context::load_request(const LoadRequest& request) const
{
  // Before the lock: in a fork()ed child the lock may be a copy a parent's thread held (loading)
  // at fork(), which no thread of the child releases; require_driver() throws there.
  const driver::DriverApi& api = driver::require_driver();
  std::lock_guard lock(m_state->mutex);
  if (const auto it = m_state->modules.find(request.key); it != m_state->modules.end()) {
    return Module(m_state, it->second);
  }
  const driver::Image image = driver::classify_image(request.bytes, request.image_name);
  auto state = std::make_shared<Module::State>();
  state->context = m_state->context;
  state->program = request.options.name;
  state->device = device_text(m_state->device);
  state->lowered_names = request.lowered_names;
  state->from_ptx = image.kind == driver::ImageKind::ptx;
  state->kind = driver::kind_name(image.kind);
  if (image.kind == driver::ImageKind::cubin) {
    state->layouts = driver::kernel_layouts(image.data());
  }
  const driver::ScopedContext scope(m_state->context);
  driver::JitOptions jit(request.options, image.kind);
  // The image is read during the call only; the driver keeps its own copy.
  const CUresult result =
    api.module_load_data_ex(&state->module, image.data().data(), jit.count(), jit.keys(), jit.values());
  if (result != CUDA_SUCCESS) {
    const std::string log = jit.error_log();
    driver::throw_cuda_error(result, "cuModuleLoadDataEx of " + state->program + " (" +
                                       (image.arch.empty() ? "" : image.arch + " ") + state->kind + ") on " +
                                       state->device + (log.empty() ? "" : ": " + log));
  }
  m_state->modules.emplace(request.key, state);
  return Module(m_state, state);
}

} // namespace kjit
