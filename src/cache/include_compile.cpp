// The compile-and-retry loop over a private folder of header copies (see docs/includes.md).
#include "cache/include_compile.hpp"

#include "cache/named_copy.hpp"
#include "cache/private_folder.hpp"

#include "cache/cache_dir.hpp"
#include "cache/direct_index.hpp"
#include "cache/cache_impl.hpp"
#include "config/log.hpp"
#include "rtc/compile_options.hpp"
#include "rtc/compiler.hpp"
#include "rtc/nvjitlink_library.hpp"
#include "rtc/nvrtc_library.hpp"
#include "util/file_size_signal.hpp"
#include "util/file.hpp"

#include <kjit/error.hpp>

#include <algorithm>
#include <cerrno>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sys/stat.h>
#include <tuple>

namespace kjit::cache {

namespace {

// At most this many folders are made for the skeletons of a compile's computed includes.
constexpr std::size_t k_skeleton_folders = 512;

// Whether `test` holds for an in-memory header or a disk header of the resolution.
template <typename Test>
bool any_header(const Program& program, deps::Resolver& resolver, const Test& test)
{
  for (const auto& [name, content] : program.headers) {
    if (test(content)) {
      return true;
    }
  }
  for (const auto& header : resolver.result().headers) {
    if (test(header.content)) {
      return true;
    }
  }
  return false;
}

// Whether the program NVRTC gets must be named as the user's (the stub below): -G names the DWARF
// compile unit by it, __BASE_FILE__ expands to it; #line changes neither.
bool wants_stub(const Program& program, deps::Resolver& resolver)
{
  const auto& options = program.options;
  const auto names_program = [](const std::string& option) { return deps::text_names_program(option); };
  return deps::device_debug(options) || deps::text_names_program(program.source) ||
         std::any_of(options.begin(), options.end(), names_program) ||  // -DF=__BASE_FILE__
         std::any_of(program.headers.begin(), program.headers.end(),
                     [](const auto& header) { return deps::text_names_program(header.second); }) ||
         resolver.headers_name_program();
}

// With -G (or __BASE_FILE__) NVRTC names the DWARF compile unit by the program's name (#line does not change it): the
// program NVRTC gets is then a stub named as the user's that includes the main source's copy by
// its absolute path. The copy's quoted includes search its own folder, as the source folder is
// searched on disk; the stub's one include is absolute, so the user's folder (the stub's) is never
// searched. The PTX, cubin and log are plain NVRTC's byte for byte (measured, NVRTC 13.0).
// Empty when the stub can do that; else why not (the program is then compiled from the disk).
std::string stub_limit(const Program& program, deps::Resolver& resolver)
{
  const std::string& path = resolver.main_path();
  if (resolver.context().source_dir.empty()) {
    return "the stub (-G or __BASE_FILE__) with --no-source-include (kept by the stub, it would search no includer's folder)";
  }
  std::string storage;
  const std::string& source = deps::as_preprocessed(program.source, storage);
  if (source.find("include_next") != std::string::npos || source.find("__INCLUDE_LEVEL__") != std::string::npos) {
    return "the stub (-G or __BASE_FILE__) and #include_next or __INCLUDE_LEVEL__ in the main source (a stub includes it)";
  }
  if (resolver.find(path) != nullptr) {
    return "the stub (-G or __BASE_FILE__) and a header including the main source";
  }
  // Each header is one level deeper under the stub than on disk.
  if (any_header(program, resolver,
                 [](const std::string& text) {
                   std::string spliced;
                   return deps::as_preprocessed(text, spliced).find("__INCLUDE_LEVEL__") != std::string::npos;
                 })) {
    return "the stub (-G or __BASE_FILE__) and __INCLUDE_LEVEL__ in a header (one level deeper under it)";
  }
  for (const char ch : path) {
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f || ch == '"' || ch == '\\') {
      return "the stub (-G or __BASE_FILE__) and a source path an #include can't name";
    }
  }
  return {};
}

std::string without(std::string text, const std::string& prefix)
{
  for (std::size_t at; !prefix.empty() && (at = text.find(prefix)) != std::string::npos;) {
    text.erase(at, prefix.size());
  }
  return text;
}

struct Missing {
  std::string includer;  // as NVRTC names it; empty for a command-line (pre-include) file
  int line = 0;
  std::string name;
};

std::vector<Missing> missing_includes(const std::string& log)
{
  static const std::regex pattern(R"((?:^|\n)(.*)\((\d+)\): (?:catastrophic )?error: cannot open source file \"([^\"]+)\")");
  std::vector<Missing> out;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), pattern); it != std::sregex_iterator(); ++it) {
    out.push_back({(*it)[1].str(), std::stoi((*it)[2].str()), (*it)[3].str()});
  }
  return out;
}

// A pre-include NVRTC may have read from the working directory instead of its copy: the
// compile's headers are not what it read. Compiled again by the caller (as for any edit).
void check_absent(const std::vector<std::string>& paths)
{
  for (const auto& path : paths) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) {
      throw HeadersChanged{};
    }
  }
}

// NVRTC read the headers linked to the disk: what it read is what kjit hashed only while their
// stamps hold.
bool links_held(const std::optional<PrivateFolder>& folder, const deps::Resolver& resolver)
{
  return !folder || !folder->linked() || resolver.unchanged();
}

bool may_read_files(const Program& program, const deps::SearchContext& context, deps::Resolver& resolver)
{
  return !context.include_dirs.empty() || !context.pre_includes.empty() || !resolver.result().headers.empty() ||
         cache::mentions_include(program);
}

Binary again(const Config& config, const Program& program, const Arch& arch, deps::Resolver& resolver, int* rounds,
             int round, Placing placing, std::optional<PrivateFolder>& folder);

// A toolkit include folder that `binary` names when the key of `program` leaves the toolkit's
// root out (options that name no file: docs/keys.md); empty when none.
std::string toolkit_named(const Program& program, const deps::SearchContext& context, const Binary& binary)
{
  if (deps::options_name_files(program.options) || direct_eligible(program)) {
    // The key holds the toolkit's folders as they are here ("named-toolkit:"), or the program
    // reads no toolkit header.
    return {};
  }
  for (const auto& dir : context.toolkit_dirs) {
    // A toolkit file's name, not a string that merely holds the folder's path (the program's own).
    if (deps::binary_names_file_in(binary.ptx, dir) || deps::binary_names_file_in(binary.cubin, dir)) {
      return dir;
    }
  }
  return {};
}

// Adopts the binary of `speculation` when what NVRTC met on disk is what `resolver` answers for;
// nullopt when the program is to be compiled from a private folder.
std::optional<Binary> adopted(const Config& config, const Program& program, deps::Resolver& resolver,
                              Speculation& speculation)
{
  std::string why;
  std::optional<Binary> binary = speculation.adopt(resolver, why);  // or the CompileError of what it holds
  if (!binary) {
    if (config.verbose) {
      log::line(program.name + ": compiled again from copies of its headers (" + why + ")");
    }
    return std::nullopt;
  }
  if (const std::string toolkit_dir = toolkit_named(program, resolver.context(), *binary); !toolkit_dir.empty()) {
    resolver.compiled_from_disk(UncachedReason::names_file,
                                "the binary names the toolkit's files (" + toolkit_dir +
                                  ": a toolkit header's __FILE__), which a portable key leaves out");
    log::line(program.name + ": " + resolver.unfaithful() + "; compiled and not cached");
  }
  return binary;
}

// The names NVRTC looked for in vain that the resolution does not watch are watched, and the user
// files it found on disk that the resolution does not hold go into it, before the compile from the
// private folder: there, an include of one it lacks fails (the retry loop looks for its name),
// but a __has_include of one answers false, and the other branch was stored (the toolkit's
// wrapper called with a macro operand, CCCL's _CCCL_HAS_INCLUDE(OPT_H)). Where the binary may
// name files, a file taken without its include's name could be named otherwise than NVRTC names
// it: there, and for a file whose own text names files, the retry loop alone takes what NVRTC
// includes (a probe the prediction missed stays unseen: docs/includes.md, "What is still not
// covered").
void take_unheld(deps::Resolver& resolver, const Speculation& speculation)
{
  const Speculation::Unheld& unheld = speculation.unheld();
  for (const std::string& path : unheld.absent) {
    resolver.watch_absence(path);  // (else its appearance would be served this binary)
  }
  if (resolver.names_files()) {
    return;
  }
  for (const std::string& path : unheld.found) {
    // One whose text names files would make the binary name them, this one by a name it was not
    // included by: left to the retry loop too (key_names/a_header_naming_files_found_by_a_retry_*).
    std::error_code error;
    const auto text = util::read_file(path, error);
    if (text && !deps::text_names_files(*text)) {
      resolver.add(path.substr(path.rfind('/') + 1), path);
    }
  }
}

Binary compile_placed(const Config& config, const Program& program, const Arch& arch, deps::Resolver& resolver,
                      int* rounds, Placing placing, Speculation* speculation = nullptr)
{
  // One toolchain per process: the Cache's own NVRTC, or a ToolchainError. nvJitLink only where
  // the compile links (-dlto): loading it maps 30 MB that a compile without it never touches.
  rtc::nvrtc_for(config);
  if (rtc::cubin_path(program, arch) == rtc::CubinPath::nvjitlink_lto) {
    rtc::nvjitlink_for(config);
  }
  const deps::SearchContext& context = resolver.context();
  // A program that can include nothing (the word "include" nowhere, no -I, no pre-include) makes
  // NVRTC read no file: no private folder then (three mkdirs and their removal cost ≈1.5 ms of a
  // 20 ms miss here, see docs/benchmarks.md).
  std::optional<PrivateFolder> folder;
  if (may_read_files(program, context, resolver)) {
    folder.emplace();
    folder->m_placing = placing;
  }
  const std::string root = folder ? folder->path() : std::string();
  Program nvrtc_program = program;
  // Without a private folder NVRTC reads no file: the program keeps its name (NVRTC names it so).
  nvrtc_program.name = root.empty() ? program.name : root + resolver.main_path();
  const bool stub = folder && resolver.names_files() && wants_stub(program, resolver);
  if (stub && !resolver.restore_texts()) {
    throw HeadersChanged{};  // (stub_limit() reads every header) one let go while NVRTC ran was edited
  }
  if (folder && resolver.names_files()) {
    folder->m_named = true;
    folder->m_after_guards = !deps::options_name_files(program.options);
    nvrtc_program.source = named(program.name, program.source);  // the name plain NVRTC would show
  }
  nvrtc_program.options = context.nvrtc_options;
  std::vector<std::string> lexical_dirs = context.include_dirs;
  lexical_dirs.push_back(deps::dir_of(resolver.main_path()));
  for (const auto& dir : context.include_dirs) {
    nvrtc_program.options.push_back("-I" + root + dir);
  }
  // A pre-include found in an -I folder is named as written, so that NVRTC finds it in that
  // folder's copy and an #include_next in it goes on from there; NVRTC looks in the working
  // directory first, where it was not (checked again after the compile).
  std::vector<std::string> absent_in_cwd;
  for (std::size_t i = 0; i < context.pre_includes.size(); ++i) {
    const std::string& name = context.pre_includes[i];
    const std::string& found = resolver.pre_include_paths()[i];
    const bool in_cwd = found.empty() || name.front() == '/' || found == deps::join_path(context.cwd, name);
    nvrtc_program.options.push_back("--pre-include=" + (in_cwd ? (found.empty() ? name : root + found) : name));
    if (!in_cwd) {
      absent_in_cwd.push_back(deps::join_path(context.cwd, name));
    }
  }
  for (int round = 1;; ++round) {
    resolver.close();
    if (folder && resolver.names_files() && (!folder->m_named || (!stub && wants_stub(program, resolver)))) {
      // A header a retry added names files (or the program, __BASE_FILE__): the copies made so far
      // are unnamed (or there is no stub). Again in a new private folder, named from the start
      // (once: names_files() and wants_stub() stay true).
      folder.reset();
      int more = 0;
      Binary binary = compile_placed(config, program, arch, resolver, &more, placing, speculation);
      if (rounds != nullptr) {
        *rounds = round - 1 + more;  // this round compiled nothing
      }
      return binary;
    }
    const std::string named_limit =
      !folder || !folder->m_named    ? std::string()
      : !resolver.two_names().empty() ? resolver.two_names()
      : stub                          ? stub_limit(program, resolver)
                                      : std::string();
    if (!resolver.unfaithful().empty() || !named_limit.empty()) {
      // The private folder could not answer as the disk would (or a copy's #line could not name
      // the file as each of its includes does, or the program uses the time): compile from the
      // disk itself. No manifest is recorded, so the entry is never found again (its key stays
      // provisional).
      log::line(program.name + ": " + (resolver.unfaithful().empty() ? named_limit : resolver.unfaithful()) +
                "; compiled from the files on disk and not cached");
      // Not cached, as it says: NVRTC reads the disk itself, which may hold more than the key
      // (a header only a computed include reaches, an edit since kjit read it): stored under the
      // key of what kjit read, it would be served after such a header is edited
      // (key_names/a_compile_from_the_disk_for_two_names_is_not_cached).
      resolver.compiled_from_disk(UncachedReason::names_file, named_limit);
      resolver.result().recordable = false;
      if (rounds != nullptr) {
        *rounds = round;
      }
      if (auto binary = speculation != nullptr ? speculation->from_disk() : std::nullopt) {
        return std::move(*binary);  // compiled from the disk already, while the headers were resolved
      }
      return rtc::compile(config, program, arch);
    }
    if (speculation != nullptr && round == 1) {
      if (auto binary = adopted(config, program, resolver, *speculation)) {
        if (rounds != nullptr) {
          *rounds = round;
        }
        return std::move(*binary);
      }
      take_unheld(resolver, *speculation);
    }
    if (!resolver.restore_texts()) {
      throw HeadersChanged{};  // a header let go while NVRTC ran is not what was hashed: resolve again
    }
    if (folder) {
      for (const auto& dir : lexical_dirs) {
        folder->ensure_dir(folder->replicate(dir).real);
      }
      folder->m_once_by_macro = resolver.once_by_macro();
      for (const auto& header : resolver.result().headers) {
        folder->place(header, resolver.spelled(header.path), resolver.start_ns());
      }
      if (stub && round == 1) {
        const std::string copy = root + resolver.main_path();
        folder->write(folder->replicate(resolver.main_path()).real, nvrtc_program.source);
        nvrtc_program.name = program.name;
        nvrtc_program.source = "#include \"" + copy + "\"\n";
      }
      // Names through a folder and "..": that folder, wherever the name may be searched.
      std::set<std::string> searched(lexical_dirs.begin(), lexical_dirs.end());
      searched.insert(context.cwd);
      for (const auto& header : resolver.result().headers) {
        searched.insert(deps::dir_of(header.path));
      }
      for (const auto& name : resolver.names()) {
        if (deps::has_dot_dot(name) && name.front() != '/') {
          for (const auto& dir : searched) {
            folder->climb(dir + "/" + name);
          }
        }
      }
      // A computed #include: any folder below where it is searched (its includer's, the -I ones).
      if (!resolver.computed_dirs().empty()) {
        std::size_t budget = k_skeleton_folders;
        for (const auto& dir : resolver.computed_dirs()) {
          folder->skeleton(dir, budget);
        }
        for (const auto& dir : context.include_dirs) {
          folder->skeleton(dir, budget);
        }
      }
    } else if (!resolver.result().headers.empty()) {  // unreachable: headers come only from "#include"
      throw Error("internal error: a header of " + program.name + " to pass without an include folder");
    }
    if (rounds != nullptr) {
      *rounds = round;
    }
    try {
      Binary binary = rtc::compile(config, nvrtc_program, arch);
      if (folder && (deps::binary_holds(binary.ptx, root) || deps::binary_holds(binary.cubin, root))) {
        resolver.copies_named();  // the next round compiles from the disk
        continue;
      }
      if (!links_held(folder, resolver)) {
        // A linked header changed while NVRTC read it: again from copies of what kjit hashed.
        return again(config, program, arch, resolver, rounds, round, {true}, folder);
      }
      if (const std::string toolkit_dir = toolkit_named(program, context, binary); !toolkit_dir.empty()) {
        // The key holds the toolkit's folders relative to its root (portable) unless the options
        // name files (-lineinfo, -G: then the root too): served under another root, this binary
        // would name the wrong files. The binary is right; it is only not stored.
        resolver.compiled_from_disk(UncachedReason::names_file,
                                    "the binary names the toolkit's files (" + toolkit_dir +
                                      ": a toolkit header's __FILE__), which a portable key leaves out");
        log::line(program.name + ": " + resolver.unfaithful() + "; compiled and not cached");
      }
      binary.log = without(binary.log, root);
      check_absent(absent_in_cwd);
      return binary;
    } catch (const OptionError& error) {
      // Named by the file the user gave, not by its copy in the private folder (gone by now).
      throw OptionError(without(error.what(), root));
    } catch (const ToolchainError& error) {
      throw ToolchainError(without(error.what(), root), error.status());
    } catch (const CompileError& error) {
      const std::vector<Missing> missing_names = missing_includes(error.log());
      if (resolver.seeded() && !missing_names.empty()) {
        // The seed was closed by a compile that did not ask for this name (another arch's
        // #if): predict anew, in a new private folder (the seed's files are in this one).
        resolver.unseed();
        return again(config, program, arch, resolver, rounds, round, placing, folder);
      }
      const std::size_t known = resolver.result().headers.size();
      for (const Missing& missing : missing_names) {
        // The copies name the user's files (#line): the main source by the program's name.
        std::string includer = missing.includer.rfind(root, 0) == 0 ? missing.includer.substr(root.size())
                                                                      : missing.includer;
        includer = includer == program.name ? resolver.main_path() : includer;
        const bool user = includer == resolver.main_path() || resolver.find(includer) != nullptr;
        const std::string text = includer == resolver.main_path() ? program.source
                                 : user                           ? resolver.find(includer)->content
                                                                  : std::string();
        // A toolkit header: NVRTC searched its own folder already.
        const deps::IncludeKind kind = user ? deps::directive_kind(text, missing.line) : deps::IncludeKind::angle;
        resolver.add_next(missing.name, kind, includer);
      }
      // A copy names the first of a file's names (a hard link, a symlinked folder): the closure
      // over every folder searched adds what the other name's folder holds.
      resolver.close();
      const bool added = resolver.result().headers.size() != known;
      if (!added) {
        check_absent(absent_in_cwd);
        if (!links_held(folder, resolver)) {
          // The error may be an edit's, half written: again from copies of what kjit hashed.
          return again(config, program, arch, resolver, rounds, round, {true}, folder);
        }
        if (!resolver.unfaithful().empty()) {
          continue;  // a name NVRTC asked for can't be answered from the private folder
        }
        throw CompileError(program.name, error.arch(), without(error.log(), root), program.options);
      }
    }
  }
}

// compile_placed() again, with `placing`, in a new private folder (the old one removed first),
// after `round` rounds of this one.
Binary again(const Config& config, const Program& program, const Arch& arch, deps::Resolver& resolver, int* rounds,
             int round, Placing placing, std::optional<PrivateFolder>& folder)
{
  folder.reset();
  int more = 0;
  Binary binary = compile_placed(config, program, arch, resolver, &more, placing);
  if (rounds != nullptr) {
    *rounds = round + more;
  }
  return binary;
}

} // namespace

Binary compile_with_includes(const Config& config, const Program& program, const Arch& arch,
                             deps::Resolver& resolver, int* rounds, Speculation* speculation)
{
  return compile_placed(config, program, arch, resolver, rounds, Placing{}, speculation);
}

} // namespace kjit::cache
