// The compile-and-retry loop over a private folder of header copies (see docs/includes.md).
#include "cache/include_compile.hpp"

#include "cache/cache_dir.hpp"
#include "rtc/compiler.hpp"
#include "rtc/nvjitlink_library.hpp"
#include "rtc/nvrtc_library.hpp"
#include "util/file.hpp"

#include <kjit/error.hpp>

#include <cerrno>
#include <fcntl.h>
#include <unistd.h>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <regex>
#include <set>

namespace kjit::cache {

namespace {

// A fresh folder under $TMPDIR, removed with everything in it when this goes away.
class PrivateFolder {
public:
  const std::string& path() const { return m_folder.path(); }

  void ensure_dir(const std::string& absolute) const
  {
    if (const std::error_code error = util::create_directories(path() + absolute, 0700)) {
      throw Error("cannot create " + path() + absolute + ": " + error.message());
    }
  }
  void write(const std::string& absolute, const std::string& content) const
  {
    ensure_dir(deps::dir_of(absolute));
    // A fresh private folder: exclusive create, no fsync (it lives for one compile).
    const std::string path = this->path() + absolute;
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    std::size_t done = 0;
    while (fd >= 0 && done < content.size()) {
      const ssize_t wrote = ::write(fd, content.data() + done, content.size() - done);
      if (wrote < 0 && errno == EINTR) {
        continue;
      }
      if (wrote <= 0) {
        break;
      }
      done += static_cast<std::size_t>(wrote);
    }
    const int saved = errno;
    if (fd >= 0) {
      ::close(fd);
    }
    if (fd < 0 || done != content.size()) {
      throw Error("cannot write " + path + ": " + std::strerror(saved));
    }
  }

private:
  TempFolder m_folder{"kjit-includes-", "a private include folder"};
};

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

bool may_read_files(const Program& program, const deps::SearchContext& context, deps::Resolver& resolver)
{
  bool may = !context.include_dirs.empty() || !context.pre_includes.empty() || !resolver.result().headers.empty() ||
             program.source.find("include") != std::string::npos;
  for (const auto& [name, content] : program.headers) {
    may = may || content.find("include") != std::string::npos;
  }
  return may;
}

} // namespace

Binary compile_with_includes(const Config& config, const Program& program, const Arch& arch,
                             deps::Resolver& resolver, int* rounds)
{
  // One toolchain per process: the Cache's own NVRTC, or a ToolchainError.
  rtc::nvrtc_for(config);
  if (!arch.is_virtual()) {
    rtc::nvjitlink_for(config);
  }
  const deps::SearchContext& context = resolver.context();
  // A program that can include nothing (the word "include" nowhere, no -I, no pre-include) makes
  // NVRTC read no file: no private folder then (three mkdirs and their removal cost ≈1.5 ms of a
  // 20 ms miss here, see docs/benchmarks.md).
  std::optional<PrivateFolder> folder;
  if (may_read_files(program, context, resolver)) {
    folder.emplace();
  }
  const std::string root = folder ? folder->path() : std::string();
  Program nvrtc_program = program;
  nvrtc_program.name = root + resolver.main_path();
  nvrtc_program.options = context.nvrtc_options;
  for (const auto& dir : context.include_dirs) {
    folder->ensure_dir(dir);
    nvrtc_program.options.push_back("-I" + root + dir);
  }
  if (folder) {
    folder->ensure_dir(deps::dir_of(resolver.main_path()));
  }
  for (std::size_t i = 0; i < context.pre_includes.size(); ++i) {
    const std::string& found = resolver.pre_include_paths()[i];
    nvrtc_program.options.push_back("--pre-include=" + (found.empty() ? context.pre_includes[i] : root + found));
  }
  std::set<std::string> written;
  for (int round = 1;; ++round) {
    resolver.close();
    for (const auto& header : resolver.result().headers) {
      if (written.insert(header.path).second) {
        if (!folder) {  // unreachable: headers come only from "#include" (see may_read_files)
          throw Error("internal error: a header of " + program.name + " to pass without an include folder");
        }
        folder->write(header.path, header.content);
      }
    }
    if (rounds != nullptr) {
      *rounds = round;
    }
    try {
      Binary binary = rtc::compile(config, nvrtc_program, arch);
      binary.log = without(binary.log, root);
      return binary;
    } catch (const OptionError& error) {
      // Named by the file the user gave, not by its copy in the private folder (gone by now).
      throw OptionError(without(error.what(), root));
    } catch (const ToolchainError& error) {
      throw ToolchainError(without(error.what(), root), error.status());
    } catch (const CompileError& error) {
      bool added = false;
      for (const Missing& missing : missing_includes(error.log())) {
        const std::string includer = missing.includer.rfind(root, 0) == 0 ? missing.includer.substr(root.size())
                                                                            : missing.includer;
        const std::string text = includer == resolver.main_path() ? program.source
                                 : resolver.find(includer) != nullptr ? resolver.find(includer)->content
                                                                      : std::string();
        deps::IncludeKind kind = deps::directive_kind(text, missing.line);
        if (missing.includer.rfind(root, 0) != 0) {
          kind = deps::IncludeKind::angle;  // a toolkit header: NVRTC searched its own folder already
        }
        if (!resolver.add_next(missing.name, kind, includer).empty()) {
          added = true;
        }
      }
      if (!added) {
        throw CompileError(program.name, error.arch(), without(error.log(), root), program.options);
      }
    }
  }
}

} // namespace kjit::cache
