// The store's "checked" stamp (see stamp.hpp and docs/cache-format.md, "store/checked").
#include "store/stamp.hpp"

#include "util/file.hpp"

#include <cstdio>
#include <fcntl.h>
#include <lmdb.h>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>

namespace kjit::store {

namespace {

constexpr const char* k_stamp = "checked";
constexpr const char* k_stamp_head = "kjit-checked 1";

std::string stamp_text(const FileState& state)
{
  char line[160];
  std::snprintf(line, sizeof line, "%s %llu %llu %lld %lld %ld %zu\n", k_stamp_head,
                static_cast<unsigned long long>(state.dev), static_cast<unsigned long long>(state.ino),
                static_cast<long long>(state.size), static_cast<long long>(state.ctime.tv_sec), state.ctime.tv_nsec,
                state.txnid);
  return line;
}

} // namespace

bool FileState::operator==(const FileState& other) const
{
  return dev == other.dev && ino == other.ino && size == other.size && ctime.tv_sec == other.ctime.tv_sec &&
         ctime.tv_nsec == other.ctime.tv_nsec && txnid == other.txnid;
}

std::optional<FileState> file_state(MDB_env* env)
{
  int fd = -1;
  struct stat st {};
  MDB_envinfo info{};
  if (env == nullptr || mdb_env_get_fd(env, &fd) != MDB_SUCCESS || ::fstat(fd, &st) != 0 ||
      mdb_env_info(env, &info) != MDB_SUCCESS) {
    return std::nullopt;
  }
  return FileState{st.st_dev, st.st_ino, st.st_size, st.st_ctim, info.me_last_txnid};
}

bool stamp_matches(const std::string& dir, const FileState& now)
{
  util::UniqueFd fd(::open((dir + "/" + k_stamp).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return false;
  }
  const std::string expected = stamp_text(now);
  std::string text(expected.size() + 1, '\0');
  const ssize_t got = ::pread(fd.get(), text.data(), text.size(), 0);
  return got == static_cast<ssize_t>(expected.size()) && text.compare(0, expected.size(), expected) == 0;
}

void write_stamp(const std::string& dir, const FileState& state, int mode) noexcept
{
  try {
    util::UniqueFd folder(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (folder) {
      std::ignore = util::write_file_atomic(folder.get(), k_stamp, stamp_text(state), mode, util::Durability::none);
    }
  } catch (...) {
  }
}

} // namespace kjit::store
