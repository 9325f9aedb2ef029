// Shared benchmark workloads.
#include "workload.hpp"

#include "cache/direct_index.hpp"
#include "cache/key.hpp"
#include "deps/manifest.hpp"
#include "cache/toolchain.hpp"
#include "store/record.hpp"
#include "store/store.hpp"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace bench {

kjit::Program kernel_program(int salt, std::size_t bytes)
{
  std::string source = "// kernel " + std::to_string(salt) + "\n"
                       "extern \"C\" __global__ void k" + std::to_string(salt) +
                       "(float a, const float* x, float* y, int n)\n"
                       "{\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = a * x[i] + y[i];\n}\n";
  while (source.size() < bytes) {
    source += "// padding to make a realistic 4 KiB kernel source text ........................................\n";
  }
  return {"bench_" + std::to_string(salt) + ".cu", source, {}, {}, {}};
}

kjit::Program heavy_program(int salt)
{
  return {"heavy.cu",
          "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <cuda/std/array>\n#include <cuda/std/limits>\n"
          "#include <cuda/std/type_traits>\n"
          "extern \"C\" __global__ void heavy" + std::to_string(salt) + "(__half* h, __nv_bfloat16* b, int n)\n"
          "{\n  cuda::std::array<float, 4> w{1, 2, 3, " + std::to_string(salt) + "};\n"
          "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
          "  if (i < n) { h[i] = __float2half(w[i % 4] + cuda::std::numeric_limits<float>::epsilon());\n"
          "               b[i] = __float2bfloat16(w[(i + 1) % 4]); }\n}\n",
          {},
          {},
          {}};
}

Folder::Folder(const std::string& tag)
{
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr ? tmp : "/tmp") + "/kjit-bench-" + tag + "-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw kjit::Error("mkdtemp failed for " + pattern);
  }
  m_path = pattern;
}

Folder::~Folder()
{
  std::error_code ignored;
  std::filesystem::remove_all(m_path, ignored);
}

kjit::Config cache_config(const std::string& dir, bool mirror)
{
  kjit::Config config = kjit::current_config();
  config.cache_dir = dir;
  config.mirror = mirror;
  config.verbose = false;
  config.disable_cache = false;
  config.memory_limit = std::size_t(4) << 30;
  return config;
}

void populate(const std::string& dir, int count, int first_salt)
{
  kjit::Config config = cache_config(dir);
  kjit::Cache cache(config);
  const auto binary = cache.get(kernel_program(first_salt), kjit::Arch::parse("sm_90"));
  auto store = kjit::store::Store::open(cache.store_path(), config.store_map_size);
  const kjit::cache::KeyContext context = kjit::cache::toolchain_context(config, store.get());
  const std::string inputs_toolchain = kjit::cache::inputs_toolchain(context);
  std::vector<kjit::store::Store::Row> rows;
  const auto flush = [&] {
    store->put(rows);
    rows.clear();
  };
  for (int i = 1; i < count; ++i) {
    const kjit::Program program = kernel_program(first_salt + i);
    const kjit::cache::KeyTexts texts = kjit::cache::make_key_texts(program, kjit::Arch::parse("sm_90"), context);
    kjit::store::Entry entry;
    entry.program_name = program.name;
    entry.program_txt = texts.program_txt;
    entry.options_txt = texts.options_txt;
    entry.source = program.source;
    entry.binary = *binary;
    // The record holds the raw inputs its direct row leads by (format 6; src/cache/lookup.cpp).
    entry.direct_inputs = kjit::cache::direct_inputs(program, kjit::Arch::parse("sm_90"), inputs_toolchain);
    const std::string key(reinterpret_cast<const char*>(texts.entry_key.data()), texts.entry_key.size());
    rows.push_back({kjit::store::Table::entries, key, kjit::store::encode_record(entry, texts.entry_key)});
    rows.push_back({kjit::store::Table::direct,
                    std::string(kjit::cache::input_digest_bytes(kjit::util::checksum(entry.direct_inputs))),
                    kjit::cache::direct_row(texts.entry_key, entry.direct_inputs.size())});
    if (rows.size() >= 2000) {
      flush();
    }
  }
  flush();
}

std::string run(const std::string& command)
{
  std::string output;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    return output;
  }
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe) != nullptr) {
    output += buffer.data();
  }
  ::pclose(pipe);
  return output;
}

std::size_t disk_bytes(const std::string& dir)
{
  std::size_t total = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) {
      total += entry.file_size();
    }
  }
  return total;
}

} // namespace bench
