// The private folder of one compile: the user headers kjit hashed, placed where their paths lead,
// a sub-replica of the disk (docs/includes.md, "How a compile gets its headers").
#pragma once

#include "cache/cache_dir.hpp"
#include "cache/named_copy.hpp"
#include "deps/resolver.hpp"
#include "deps/search.hpp"
#include "util/file.hpp"
#include "util/file_size_signal.hpp"

#include <kjit/error.hpp>

#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <map>
#include <set>
#include <string>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>
#include <vector>

namespace kjit::cache {

// How headers are placed in a private folder (see PrivateFolder::place).
struct Placing {
  bool copies_every = false;  // no links: a linked header changed during a compile
};

// A fresh folder under $TMPDIR, removed with everything in it when this goes away.
class PrivateFolder {
public:
  const std::string& path() const { return m_folder.path(); }

  // Makes `lexical` (absolute, as NVRTC will meet it under the private folder) lead where it
  // leads on disk: each symlink met is made here too, pointing under the private folder to
  // where it leads on disk, and that folder made. Returns the walk (its symlink-free path).
  deps::PathWalk replicate(const std::string& lexical)
  {
    deps::PathWalk walk = deps::walk_path(lexical);
    for (const auto& link : walk.links) {
      if (m_links.insert(link).second) {
        ensure_dir(deps::dir_of(link));
        // To where it leads on disk, under the private folder: "link/.." then leads where it
        // leads on disk, and a relative target can't climb out of the private folder.
        const std::string leads_to = deps::walk_path(link).real;
        const std::string there = path() + leads_to;
        if (::symlink(there.c_str(), (path() + link).c_str()) != 0 && errno != EEXIST) {
          throw Error("cannot create " + path() + link + ": " + std::strerror(errno));
        }
        struct stat st {};
        if (::stat(leads_to.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
          ensure_dir(leads_to);
        }
      }
    }
    return walk;
  }
  // Makes every folder that `lexical` passes through before a ".." exist here as on disk, so that
  // "sub/../x.h" leads where it leads on disk even when "sub" holds nothing kjit passes (else
  // NVRTC goes on to the next folder: the toolkit's "crt/../vector_types.h" is the toolkit's file).
  void climb(const std::string& lexical)
  {
    std::string prefix;
    for (std::size_t at = 1; at <= lexical.size();) {
      const auto slash = std::min(lexical.find('/', at), lexical.size());
      const std::string part = lexical.substr(at, slash - at);
      at = slash + 1;
      if (part.empty() || part == ".") {
        continue;
      }
      if (part == ".." && !prefix.empty() && m_climbed.insert(prefix).second) {
        const deps::PathWalk walk = replicate(prefix);
        if (!walk.climbed && is_dir(walk.real)) {
          ensure_dir(walk.real);
        }
      }
      prefix += "/" + part;
    }
  }
  // The folders below `dir` on disk, made here (symlinked ones as links), while `budget` lasts: a
  // name only NVRTC forms (a computed #include) may pass through any of them before a "..".
  void skeleton(const std::string& dir, std::size_t& budget)
  {
    std::vector<std::string> pending{dir};
    while (!pending.empty() && budget > 0) {
      const std::string at = pending.back();
      pending.pop_back();
      if (!m_skeletons.insert(at).second) {
        continue;
      }
      DIR* handle = ::opendir(at.c_str());
      if (handle == nullptr) {
        continue;
      }
      std::vector<std::string> below;
      while (const dirent* entry = ::readdir(handle)) {
        const std::string name = entry->d_name;
        if (name != "." && name != ".." && (entry->d_type == DT_DIR || entry->d_type == DT_LNK || entry->d_type == DT_UNKNOWN)) {
          below.push_back(at + "/" + name);
        }
      }
      ::closedir(handle);
      for (const auto& path : below) {
        struct stat st {};
        if (budget == 0 || ::lstat(path.c_str(), &st) != 0) {
          continue;
        }
        if (S_ISDIR(st.st_mode)) {
          --budget;
          ensure_dir(replicate(path).real);
          pending.push_back(path);
        } else if (S_ISLNK(st.st_mode) && is_dir(path)) {
          --budget;
          replicate(path);  // the link, and the folder it leads to; not followed further
        }
      }
    }
  }
  static bool is_dir(const std::string& path)
  {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  }
  void ensure_dir(const std::string& real) const
  {
    if (const std::error_code error = util::create_directories(path() + real, 0700)) {
      throw Error("cannot create " + path() + real + ": " + error.message());
    }
  }
  // Places `header` where its path leads. One file on disk (a hard link's two names, the same
  // inode and stamp) is one file here too, so that #pragma once (by inode) sees one file; in a
  // binary naming files, one without #pragma once gets a copy per name (each names itself).
  //
  // In a binary that names no file, a header whose stamp is older than the resolution's start
  // (not too_new(): any later edit changes its stamp) is a symlink to the file on disk instead of
  // a copy (with the folder on tmpfs: a vendored CCCL's 1 691 copies cost 0.5–0.8 s of a 2.7 s
  // compile on ext4, docs/benchmarks.md). NVRTC names and searches a link by where it is (its
  // includer's folder is the private one), and opens one file on disk by both names of a hard
  // link, as it does without kjit. What it read is what kjit hashed only while the stamps hold:
  // the caller asks resolver.unchanged() after the compile when linked(), and compiles again from
  // copies (copies_every) if not. In a binary that may name files every header is a named copy: a
  // header whose own text names nothing may expand another's __FILE__ macro, and a binary holding
  // only a character or the size of the name can't be told from one that holds none (a review
  // found 'd' of /dev/shm/… served for '.' of "c.h" when only the texts naming files were copies).
  void place(const deps::DiskHeader& header, const std::string& spelled, std::int64_t start_ns)
  {
    const std::string real = replicate(header.path).real;
    if (!m_files.insert(real).second) {
      return;  // reached before by another name (a symlinked folder)
    }
    if (!m_placing.copies_every && !m_named && header.stamp.exists && !deps::too_new(header.stamp, start_ns)) {
      ensure_dir(deps::dir_of(real));
      if (::symlink(header.path.c_str(), (path() + real).c_str()) != 0) {
        throw Error("cannot create " + path() + real + ": " + std::strerror(errno));
      }
      m_linked = true;
      return;
    }
    const auto identity = std::make_tuple(header.stamp.device, header.stamp.inode, header.stamp.size,
                                          header.stamp.mtime_ns, header.stamp.ctime_ns);
    ensure_dir(deps::dir_of(real));
    if (const auto first = m_inodes.find(identity); first == m_inodes.end()) {
      m_inodes.emplace(identity, real);
    } else if (!m_named || m_once_by_macro || deps::must_be_one_copy(header.content)) {
      if (::link((path() + first->second).c_str(), (path() + real).c_str()) != 0) {
        throw Error("cannot create " + path() + real + ": " + std::strerror(errno));
      }
      return;
    }  // else a copy of its own, named by this name (NVRTC on disk names each inclusion so)
    write(real, m_named ? named(spelled, header.content, m_after_guards) : header.content);
  }
  void write(const std::string& real, const std::string& content) const
  {
    // A fresh private folder: exclusive create, no fsync (it lives for one compile).
    const std::string path = this->path() + real;
    const util::FileSizeSignalBlock no_sigxfsz;  // a copy past ulimit -f fails (EFBIG), never kills the host
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

  bool m_named = false;  // copies begin with #line naming the user's file (see names_files())
  bool m_once_by_macro = false;  // every header may say #pragma once (Resolver::once_by_macro())
  bool m_after_guards = false;  // ... after their include guard (named()): no -G, no -lineinfo
  // Whether a header was placed as a symlink to the disk (its stamps must hold after the compile).
  bool linked() const { return m_linked; }
  Placing m_placing;

private:
  TempFolder m_folder{"kjit-includes-", "a private include folder", true};
  std::set<std::string> m_links;  // symlinks made (their paths on disk)
  bool m_linked = false;
  std::set<std::string> m_files;  // files placed (their symlink-free paths)
  std::set<std::string> m_climbed;    // lexical folders before a ".." made here
  std::set<std::string> m_skeletons;  // folders whose subfolders are made here
  std::map<std::tuple<std::uint64_t, std::uint64_t, std::int64_t, std::int64_t, std::int64_t>, std::string> m_inodes;
};

} // namespace kjit::cache
