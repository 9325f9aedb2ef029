// kjit list / show / cat: the entries of a cache and what one of them holds.
#include "cache_args.hpp"

#include <cstdio>
#include <iostream>

namespace kjit::cli {

namespace {

std::string info_json(const EntryInfo& e)
{
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.3f", e.compile_ms);
  return "{\"key\": " + json_string(e.key) + ", \"program\": " + json_string(e.program_name) +
         ", \"arch\": " + json_string(e.arch) + ", \"failed\": " + (e.failed ? "true" : "false") +
         ", \"created\": " + std::to_string(e.created_unix) + ", \"record_bytes\": " + std::to_string(e.record_bytes) +
         ", \"cubin_bytes\": " + std::to_string(e.cubin_bytes) + ", \"ptx_bytes\": " + std::to_string(e.ptx_bytes) +
         ", \"source_bytes\": " + std::to_string(e.source_bytes) + ", \"log_bytes\": " + std::to_string(e.log_bytes) +
         ", \"compile_ms\": " + ms + "}";
}

// An empty --name or --arch would select every entry (kjit export --name "$UNSET" exporting all):
// bad usage.
EntryFilter filter_of(const po::variables_map& vm)
{
  for (const char* option : {"name", "arch"}) {
    if (vm.count(option) != 0 && vm[option].as<std::string>().empty()) {
      throw UsageError{std::string("--") + option + " needs a value, not \"\" (leave it out to select every entry)", ""};
    }
  }
  EntryFilter filter;
  if (vm.count("name") != 0) {
    filter.name = vm["name"].as<std::string>();
  }
  if (vm.count("arch") != 0) {
    filter.arch = vm["arch"].as<std::string>();
  }
  return filter;
}

} // namespace

void add_filter_options(po::options_description& visible)
{
  visible.add_options()
    ("name", po::value<std::string>(), "only entries of this program name (or file name: saxpy.cu)")
    ("arch", po::value<std::string>(), "only entries for this arch (sm_90, compute_90…)");
}

EntryFilter parsed_filter(const po::variables_map& vm)
{
  return filter_of(vm);
}

int command_list(const std::vector<std::string>& args)
{
  po::options_description visible("options");
  add_filter_options(visible);
  visible.add_options()("json", "one JSON array");
  add_cache_dir_option(visible);
  po::variables_map vm;
  if (!parse_arguments(args, "kjit list [--name NAME] [--arch ARCH] [--json] [--cache-dir DIR]", visible, {}, {}, vm)) {
    return 0;
  }
  const EntryFilter filter = filter_of(vm);
  const auto cache = open_cache(vm, Access::read);
  const std::vector<EntryInfo> entries = cache ? cache->entries(filter) : std::vector<EntryInfo>{};
  if (vm.count("json") != 0) {
    std::cout << "[";
    for (std::size_t i = 0; i < entries.size(); ++i) {
      std::cout << (i == 0 ? "\n  " : ",\n  ") << info_json(entries[i]);
    }
    std::cout << (entries.empty() ? "]\n" : "\n]\n");
    return 0;
  }
  for (const EntryInfo& e : entries) {
    std::printf("%.12s  %-24s %-11s %10s  %s%s\n", e.key.c_str(), one_line(e.program_name).c_str(), e.arch.c_str(),
                format_bytes(e.record_bytes).c_str(), format_time(e.created_unix).c_str(),
                e.failed ? "  (compile error)" : "");
  }
  return 0;
}

namespace {

// KEY-PREFIX as given; an empty one is bad usage (exit 2, as `script show ''`), found before the
// cache is opened. One that is no key's (not hex, too long) is an error of the lookup (exit 1).
std::string key_prefix(const po::variables_map& vm)
{
  const std::string prefix = vm["key"].as<std::string>();
  if (prefix.empty()) {
    throw UsageError{"KEY-PREFIX needs 1 to 64 lowercase hex digits, not \"\"", ""};
  }
  return prefix;
}

} // namespace

int command_show(const std::vector<std::string>& args)
{
  po::options_description visible("options");
  visible.add_options()("json", "as JSON");
  add_cache_dir_option(visible);
  po::options_description hidden;
  hidden.add_options()("key", po::value<std::string>()->required(), "key prefix");
  po::positional_options_description positional;
  positional.add("key", 1);
  po::variables_map vm;
  if (!parse_arguments(args, "kjit show KEY-PREFIX [--json] [--cache-dir DIR]", visible, hidden, positional, vm)) {
    return 0;
  }
  const std::string prefix = key_prefix(vm);
  const auto cache = open_cache(vm, Access::read);
  if (!cache) {
    throw Error("no cache at " + current_config().cache_dir);
  }
  const EntryContents c = cache->entry(prefix);
  std::vector<KernelInfo> kernels;
  if (!c.binary.cubin.empty()) {
    try {
      kernels = read_kernels(c.binary.cubin);
    } catch (const Error& e) {
      std::cerr << "kjit show: cannot read the kernels of the cubin: " << e.what() << "\n";
    }
  }
  if (vm.count("json") != 0) {
    std::string text = info_json(c.info);
    text.pop_back();
    text += ", \"lowered_names\": {";
    for (std::size_t i = 0; i < c.binary.lowered_names.size(); ++i) {
      text += (i == 0 ? "" : ", ") + json_string(c.binary.lowered_names[i].first) + ": " +
              json_string(c.binary.lowered_names[i].second);
    }
    text += "}, \"kernels\": [";
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      const KernelInfo& k = kernels[i];
      text += std::string(i == 0 ? "" : ", ") + "{\"name\": " + json_string(k.name) +
              ", \"registers\": " + std::to_string(k.registers) +
              ", \"shared_bytes\": " + std::to_string(k.static_shared_bytes) +
              ", \"local_bytes\": " + std::to_string(k.local_bytes) +
              ", \"const_bytes\": " + std::to_string(k.const_bytes) +
              ", \"max_threads\": " + std::to_string(k.max_threads) +
              ", \"param_bytes\": " + std::to_string(k.param_bytes) + ", \"params\": [";
      for (std::size_t j = 0; j < k.params.size(); ++j) {
        const KernelParam& p = k.params[j];
        text += std::string(j == 0 ? "" : ", ") + "{\"index\": " + std::to_string(p.index) +
                ", \"offset\": " + std::to_string(p.offset) + ", \"size\": " + std::to_string(p.size) + "}";
      }
      text += "]}";
    }
    std::cout << text << "]}\n";
    return 0;
  }
  const EntryInfo& e = c.info;
  std::cout << "key:       " << e.key << "\n"
            << "program:   " << one_line(e.program_name) << "\n"
            << "arch:      " << e.arch << (e.failed ? "  (a remembered compile error)" : "") << "\n"
            << "created:   " << format_time(e.created_unix) << "\n"
            << "record:    " << format_bytes(e.record_bytes) << " (cubin " << format_bytes(e.cubin_bytes) << ", PTX "
            << format_bytes(e.ptx_bytes) << ", source " << format_bytes(e.source_bytes) << ", log "
            << format_bytes(e.log_bytes) << ")\n";
  std::printf("compiled:  in %.1f ms (nvrtc %.1f ms, nvJitLink %.1f ms)\n", e.compile_ms, c.binary.timings.nvrtc_ms,
              c.binary.timings.link_ms);
  for (const std::string& option : c.options) {
    std::cout << "option:    " << option << "\n";
  }
  for (const auto& [expression, lowered] : c.binary.lowered_names) {
    std::cout << "name:      " << expression << " -> " << lowered << "\n";
  }
  for (const KernelInfo& k : kernels) {
    std::cout << "kernel:    " << k.name << ": " << k.registers << " registers, " << k.static_shared_bytes
              << " B shared, " << k.local_bytes << " B local, " << k.const_bytes << " B constant"
              << (k.max_threads != 0 ? ", max " + std::to_string(k.max_threads) + " threads" : std::string()) << "\n";
    std::cout << "params:    " << k.params.size() << " (" << k.param_bytes << " B):";
    for (const KernelParam& p : k.params) {
      std::cout << " #" << p.index << " @" << p.offset << " " << p.size << " B;";
    }
    std::cout << "\n";
  }
  return 0;
}

int command_cat(const std::vector<std::string>& args)
{
  po::options_description visible("what to print (one)");
  visible.add_options()
    ("source", "the program text")
    ("ptx", "the PTX")
    ("cubin", "the cubin (binary; redirect it to a file)")
    ("log", "the compile log")
    ("program", "program.txt (hashed key text)")
    ("options", "options.txt (hashed key text)");
  add_cache_dir_option(visible);
  po::options_description hidden;
  hidden.add_options()("key", po::value<std::string>()->required(), "key prefix");
  po::positional_options_description positional;
  positional.add("key", 1);
  po::variables_map vm;
  const std::string synopsis = "kjit cat KEY-PREFIX --source|--ptx|--cubin|--log|--program|--options [--cache-dir DIR]";
  if (!parse_arguments(args, synopsis, visible, hidden, positional, vm)) {
    return 0;
  }
  const char* parts[] = {"source", "ptx", "cubin", "log", "program", "options"};
  std::string part;
  for (const char* candidate : parts) {
    if (vm.count(candidate) != 0) {
      if (!part.empty()) {
        throw UsageError{"give only one of --source, --ptx, --cubin, --log, --program, --options", "usage: " + synopsis + "\n"};
      }
      part = candidate;
    }
  }
  if (part.empty()) {
    throw UsageError{"say what to print: --source, --ptx, --cubin, --log, --program or --options", "usage: " + synopsis + "\n"};
  }
  const std::string prefix = key_prefix(vm);
  const auto cache = open_cache(vm, Access::read);
  if (!cache) {
    throw Error("no cache at " + current_config().cache_dir);
  }
  const EntryContents c = cache->entry(prefix);
  const std::string& text = part == "source"  ? c.source
                            : part == "ptx"   ? c.binary.ptx
                            : part == "cubin" ? c.binary.cubin
                            : part == "log"   ? c.binary.log
                            : part == "program" ? c.program_txt
                                                : c.options_txt;
  if (c.info.failed && (part == "ptx" || part == "cubin")) {
    throw Error("the entry " + c.info.key + " is a remembered compile error: it has no " + part +
                " (kjit cat " + c.info.key.substr(0, 12) + " --log prints the error)");
  }
  if (part == "cubin" && text.empty()) {
    throw Error("the entry " + c.info.key + " has no cubin (" + c.info.arch + ")");
  }
  std::cout.write(text.data(), static_cast<std::streamsize>(text.size()));
  return 0;  // output that could not be written: exit 1 (main.cpp, written())
}

} // namespace kjit::cli
