// The toolkit fingerprint's folder stamps, checked relative to each tree's root (opened once per
// check): a change anywhere in the trees, or a root link pointed at another tree, is still seen.
#include <boost/test/unit_test.hpp>

#include "deps/toolkit_headers.hpp"
#include "fixture.hpp"

#include <cstdio>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace kjit::test;

BOOST_FIXTURE_TEST_SUITE(toolkit_stamps, CacheFixture)

BOOST_AUTO_TEST_CASE(a_deep_folder_change_under_a_linked_root_is_seen)
{
  // As /usr/local/cuda/include: a link to the real tree, with a second root nested in the first.
  const std::string real = tmp.path() + "/cuda-1/include";
  put(real + "/cccl/cuda/std/__atomic/a.h", "#define A 1\n");
  put(real + "/top.h", "#define T 1\n");
  BOOST_TEST_REQUIRE(::symlink((tmp.path() + "/cuda-1").c_str(), (tmp.path() + "/cuda").c_str()) == 0);
  const std::vector<std::string> dirs{tmp.path() + "/cuda/include", tmp.path() + "/cuda/include/cccl"};
  const auto store = kjit::store::Store::open(tmp.path() + "/store", 1 << 20);
  const std::string first = kjit::deps::toolkit_headers_fingerprint(dirs, store.get());
  BOOST_TEST(kjit::deps::toolkit_headers_fingerprint(dirs, store.get()) == first);  // stamps hold

  put(real + "/cccl/cuda/std/__atomic/b.h", "#define B 1\n");  // a new file, four folders down
  const std::string added = kjit::deps::toolkit_headers_fingerprint(dirs, store.get());
  BOOST_TEST(added != first);

  // The link now names another tree with the first content: its folders have other inodes.
  put(tmp.path() + "/cuda-2/include/cccl/cuda/std/__atomic/a.h", "#define A 1\n");
  put(tmp.path() + "/cuda-2/include/top.h", "#define T 1\n");
  BOOST_TEST_REQUIRE(::unlink((tmp.path() + "/cuda").c_str()) == 0);
  BOOST_TEST_REQUIRE(::symlink((tmp.path() + "/cuda-2").c_str(), (tmp.path() + "/cuda").c_str()) == 0);
  BOOST_TEST(kjit::deps::toolkit_headers_fingerprint(dirs, store.get()) == first);  // walked again: same content
  put(tmp.path() + "/cuda-2/include/top.h.new", "#define T 2\n");
  BOOST_TEST_REQUIRE(std::rename((tmp.path() + "/cuda-2/include/top.h.new").c_str(),
                                 (tmp.path() + "/cuda-2/include/top.h").c_str()) == 0);
  BOOST_TEST(kjit::deps::toolkit_headers_fingerprint(dirs, store.get()) != first);
}

// A folder changed and its mtime then set back, as `tar x`, `rsync -a` and `cp -a` leave a tree
// unpacked over another (the archive's folder times): still seen, by the folder's ctime, which no
// program can set. A stamp of the mtime and inode alone kept the old fingerprint (a surviving
// mutant, docs/testing.md): keys named the old toolkit headers after they changed.
BOOST_AUTO_TEST_CASE(a_folder_change_with_its_mtime_set_back_is_seen)
{
  const std::string root = tmp.path() + "/cuda/include";
  put(root + "/top.h", "#define T 1\n");
  const std::vector<std::string> dirs{root};
  struct stat before {};
  BOOST_TEST_REQUIRE(::stat(root.c_str(), &before) == 0);
  const std::string first = kjit::deps::toolkit_headers_fingerprint(dirs, nullptr);
  BOOST_TEST(kjit::deps::toolkit_headers_fingerprint(dirs, nullptr) == first);  // stamps hold
  put(root + "/top.h.new", "#define T 2\n");
  BOOST_TEST_REQUIRE(std::rename((root + "/top.h.new").c_str(), (root + "/top.h").c_str()) == 0);
  const timespec times[2] = {before.st_atim, before.st_mtim};
  BOOST_TEST_REQUIRE(::utimensat(AT_FDCWD, root.c_str(), times, 0) == 0);
  struct stat after {};
  BOOST_TEST_REQUIRE(::stat(root.c_str(), &after) == 0);
  BOOST_TEST_REQUIRE(after.st_mtim.tv_sec == before.st_mtim.tv_sec);
  BOOST_TEST_REQUIRE(after.st_mtim.tv_nsec == before.st_mtim.tv_nsec);
  BOOST_TEST_REQUIRE(after.st_ino == before.st_ino);
  if (after.st_ctim.tv_sec == before.st_ctim.tv_sec && after.st_ctim.tv_nsec == before.st_ctim.tv_nsec) {
    // A file system whose clock ticks coarser than these steps: nothing tells the folders apart.
    BOOST_TEST_MESSAGE("skipped: the folder's ctime did not move (coarse timestamps)");
    return;
  }
  BOOST_TEST(kjit::deps::toolkit_headers_fingerprint(dirs, nullptr) != first);
}

BOOST_AUTO_TEST_SUITE_END()
