// Walking the store in a child process before this one trusts its pages (store_impl.hpp).
#include "store/store_impl.hpp"

#include "store/check.hpp"
#include "store/isolated.hpp"

#include <fcntl.h>
#include <tuple>
#include <unistd.h>

namespace kjit::store {

void Store::Impl::walk_unless_known_sound(std::size_t map_size)
{
  MDB_envinfo info{};
  mdb_env_info(env, &info);
  const std::optional<FileState> before = file_state(env);
  if (info.me_last_pgno <= 1 || (before && stamp_matches(lmdb_path, *before))) {
    // The common case: the stamp a kjit process wrote after its last commit or walk (an fstat and
    // a read of a small file), or a store made empty (nothing but the meta pages LMDB checks).
    std::lock_guard lock(sound_mutex);
    sound = before;
    stamped = info.me_last_pgno <= 1 ? stamped : before;
    return;
  }
  std::string detail;
  ++walks;
  const Walk walk = walk_isolated(map_size, mode == Mode::read_only_no_lock, detail);
  if (walk == Walk::damaged) {
    throw Damaged("its walk before the first read failed (" + detail + ")", MDB_CORRUPTED);
  }
  const std::optional<FileState> after = file_state(env);
  if (walk == Walk::sound && before && after == before) {  // nothing wrote while the walk ran
    std::lock_guard lock(sound_mutex);
    sound = before;
    stamped = before;
    if (mode == Mode::writable) {
      write_stamp(lmdb_path, *before, file_mode());
    }
  }
}

Walk Store::Impl::walk_isolated(std::size_t map_size, bool no_lock, std::string& detail) const
{
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return Walk::not_run;
  }
  const std::string dir = lmdb_path;
  const IsolatedOutcome outcome = run_isolated(
    [&] {
      std::size_t rows = 0;
      std::string why;
      const Walk walk = walk_store(dir, no_lock, rows, why);
      const char found = walk == Walk::not_run ? 'n' : 'w';  // n(ot run): no verdict
      std::ignore = ::write(pipe_fds[1], &found, 1);
      return walk == Walk::sound ? 0 : 1;
    },
    IsolatedLimits{30.0, map_size + (std::size_t(1) << 30)}, detail);
  ::close(pipe_fds[1]);
  char found = 0;
  const bool said = ::read(pipe_fds[0], &found, 1) == 1;
  ::close(pipe_fds[0]);
  if (outcome == IsolatedOutcome::ok) {
    return Walk::sound;
  }
  const bool not_run = outcome == IsolatedOutcome::no_child || (outcome == IsolatedOutcome::failed && said && found == 'n');
  return not_run ? Walk::not_run : Walk::damaged;
}

} // namespace kjit::store
