// kjit compile FILE --arch ARCH: compile a CUDA C++ file and write its PTX and cubin.
#include "commands.hpp"
#include "options.hpp"

#include <kjit/kjit.hpp>

#include <cstdio>
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

} // namespace

int command_compile(const std::vector<std::string>& args)
{
  po::options_description visible("options");
  visible.add_options()
    ("arch,a", po::value<std::string>()->default_value("auto"), "target: sm_XY, sm_XYa, compute_XY or auto")
    ("define,D", po::value<std::vector<std::string>>()->composing(), "define a macro (-DNAME or -DNAME=VALUE)")
    ("include,I", po::value<std::vector<std::string>>()->composing(), "add an include folder")
    ("name-expr,n", po::value<std::vector<std::string>>()->composing(), "name expression, e.g. 'scale<float>'")
    ("option,X", po::value<std::vector<std::string>>()->composing(), "pass an option to NVRTC, e.g. -X--std=c++17")
    ("output,o", po::value<std::string>()->default_value("."), "folder for the .ptx and .cubin")
    ("no-cache", "compile without reading or writing the cache")
    ("cache-dir", po::value<std::string>(), "cache folder (default: KJIT_CACHE_DIR or ~/.cache/kjit)");
  po::options_description hidden;
  hidden.add_options()("file", po::value<std::string>()->required(), "CUDA C++ file");
  po::positional_options_description positional;
  positional.add("file", 1);
  po::variables_map vm;
  if (!parse_arguments(args, "kjit compile FILE [options]", visible, hidden, positional, vm)) {
    return 0;
  }

  Program program = program_from_file(vm["file"].as<std::string>());
  auto list = [&vm](const char* key) {
    return vm.count(key) != 0 ? vm[key].as<std::vector<std::string>>() : std::vector<std::string>{};
  };
  for (const auto& define : list("define")) {
    program.options.push_back("-D" + define);
  }
  for (const auto& dir : list("include")) {
    program.options.push_back("-I" + dir);
  }
  for (const auto& option : list("option")) {
    program.options.push_back(option);
  }
  program.name_expressions = list("name-expr");
  const Arch arch = Arch::parse(vm["arch"].as<std::string>());

  if (vm.count("cache-dir") != 0) {
    option::cache_dir(vm["cache-dir"].as<std::string>());
  }
  Binary binary;
  if (vm.count("no-cache") != 0) {
    binary = compile(program, arch);
    std::cout << "compiled (cache bypassed)\n";
  } else {
    Cache& cache = default_cache();
    const PreparedProgram prepared = cache.prepare(program, arch);
    binary = *cache.get(prepared);
    const CacheStats stats = cache.stats();
    std::cout << (stats.disk_hits > 0 ? "cache hit" : "compiled") << " " << prepared.key() << "\n";
  }
  const std::string out_dir = vm["output"].as<std::string>();
  const std::string stem = program.name.substr(0, program.name.rfind('.'));
  write_output(out_dir + "/" + stem + ".ptx", binary.ptx);
  std::cout << out_dir << "/" << stem << ".ptx (" << binary.ptx.size() << " bytes)\n";
  if (!binary.cubin.empty()) {
    write_output(out_dir + "/" + stem + "." + binary.arch + ".cubin", binary.cubin);
    std::cout << out_dir << "/" << stem << "." << binary.arch << ".cubin (" << binary.cubin.size() << " bytes)\n";
  }
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
