// kjit compile FILE --arch ARCH: compile a CUDA C++ file through the cache; write its PTX and cubin
// and list each kernel's registers and memory.
#include "commands.hpp"
#include "program_args.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace kjit::cli {

namespace {

void write_output(const std::string& path, const std::string& content)
{
  std::ofstream out(path, std::ios::binary);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  if (!out.flush()) {
    throw Error("cannot write " + path);
  }
}

// One line per kernel: what users look at first when tuning (registers, shared/local memory).
void print_kernels(const Binary& binary)
{
  if (binary.cubin.empty()) {
    return;
  }
  std::cout << "cubin made by " << (binary.cubin_path.empty() ? "unknown" : binary.cubin_path) << "\n";
  for (const KernelInfo& kernel : binary.kernels()) {
    std::printf("kernel %s: %d registers, %u B shared, %u B local, %zu params (%u B)", kernel.name.c_str(),
                kernel.registers, kernel.static_shared_bytes, kernel.local_bytes, kernel.params.size(),
                kernel.param_bytes);
    if (kernel.max_threads != 0) {
      std::printf(", max %u threads", kernel.max_threads);
    }
    std::printf("\n");
  }
}

} // namespace

int command_compile(const std::vector<std::string>& args)
{
  po::options_description visible("options");
  po::options_description hidden;
  po::positional_options_description positional;
  add_program_options(visible, hidden, positional);
  visible.add_options()
    ("output,o", po::value<std::string>()->default_value("."), "folder for the .ptx and .cubin")
    ("no-cache", "compile without reading or writing the cache");
  po::variables_map vm;
  if (!parse_arguments(args, "kjit compile FILE [options]", visible, hidden, positional, vm)) {
    return 0;
  }
  Arch arch;
  const Program program = program_from_arguments(vm, arch);

  Binary binary;
  if (vm.count("no-cache") != 0) {
    binary = compile(program, arch);
    std::cout << "compiled (cache bypassed)\n";
  } else {
    Cache& cache = default_cache();
    PreparedProgram prepared = cache.prepare(program, arch);
    binary = *cache.get(prepared);
    if (prepared.provisional()) {
      prepared = cache.prepare(program, arch);  // the key the compile established
    }
    const CacheStats stats = cache.stats();
    std::cout << (stats.compiled_elsewhere > 0                     ? "compiled by another process"
                  : stats.disk_hits + stats.bundle_hits > 0        ? "cache hit"
                                                                   : "compiled")
              << " " << prepared.key() << "\n";
  }
  std::string out_dir = vm["output"].as<std::string>();
  while (out_dir.size() > 1 && out_dir.back() == '/') {
    out_dir.pop_back();  // "out/" prints as out/saxpy.ptx, not out//saxpy.ptx
  }
  std::error_code mkdir_error;
  std::filesystem::create_directories(out_dir, mkdir_error);
  if (mkdir_error) {
    throw Error("cannot create the output folder " + out_dir + ": " + mkdir_error.message());
  }
  const std::string base = program.name.substr(program.name.rfind('/') + 1);  // the name is the FILE as given
  const std::string stem = base.substr(0, base.rfind('.'));
  if (!binary.ptx.empty()) {
    write_output(out_dir + "/" + stem + ".ptx", binary.ptx);
    std::cout << out_dir << "/" << stem << ".ptx (" << binary.ptx.size() << " bytes)\n";
  }
  if (!binary.cubin.empty()) {
    write_output(out_dir + "/" + stem + "." + binary.arch + ".cubin", binary.cubin);
    std::cout << out_dir << "/" << stem << "." << binary.arch << ".cubin (" << binary.cubin.size() << " bytes)\n";
  }
  print_kernels(binary);
  for (const auto& [expression, lowered] : binary.lowered_names) {
    std::cout << expression << " -> " << lowered << "\n";
  }
  std::printf("load %.1f ms, nvrtc %.1f ms, nvJitLink %.1f ms, total %.1f ms\n", binary.timings.load_ms,
              binary.timings.nvrtc_ms, binary.timings.link_ms, binary.timings.total_ms);
  if (!binary.log.empty()) {
    std::cerr << binary.log << "\n";
  }
  return 0;
}

} // namespace kjit::cli
