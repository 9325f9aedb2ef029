// The toolkit fingerprint's folder stamps, checked relative to each tree's root (opened once per
// check): a change anywhere in the trees, or a root link pointed at another tree, is still seen.
// The libraries' GNU build IDs (the name of the fleet's memo of their versions) are read from the
// file the caller stat()ed, and a damaged or foreign file has none.
#include <boost/test/unit_test.hpp>

#include "deps/toolkit_headers.hpp"
#include "fixture.hpp"
#include "rtc/build_id.hpp"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace kjit::test;

namespace {

template <typename T>
void put_at(std::string& bytes, std::size_t at, T value)
{
  std::memcpy(bytes.data() + at, &value, sizeof value);
}

// The smallest ELF64 file with a build ID: header, one PT_NOTE program header, the note with
// `id` (20 bytes, as ld's sha1).
std::string elf_with_build_id(const std::string& id)
{
  std::string bytes(120 + 16 + id.size(), '\0');
  bytes.replace(0, 6, "\x7f" "ELF\x02\x01");
  put_at<std::uint64_t>(bytes, 32, 64);  // e_phoff
  put_at<std::uint16_t>(bytes, 54, 56);  // e_phentsize
  put_at<std::uint16_t>(bytes, 56, 1);   // e_phnum
  put_at<std::uint32_t>(bytes, 64, 4);   // p_type PT_NOTE
  put_at<std::uint64_t>(bytes, 64 + 8, 120);
  put_at<std::uint64_t>(bytes, 64 + 32, 16 + id.size());
  put_at<std::uint32_t>(bytes, 120, 4);
  put_at<std::uint32_t>(bytes, 124, static_cast<std::uint32_t>(id.size()));
  put_at<std::uint32_t>(bytes, 128, 3);  // NT_GNU_BUILD_ID
  bytes.replace(132, 4, std::string("GNU\0", 4));
  bytes.replace(136, id.size(), id);
  return bytes;
}

} // namespace

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

BOOST_AUTO_TEST_CASE(a_library_build_id_is_read_from_its_note_and_only_from_the_file_seen)
{
  const std::string lib = tmp.path() + "/libx.so";
  put(lib, elf_with_build_id("0123456789abcdefghij"));
  const auto id = kjit::rtc::gnu_build_id(lib);
  BOOST_TEST(id.value_or("") == "303132333435363738396162636465666768696a");
  const kjit::rtc::FileSeen seen = kjit::rtc::stat_file(lib);
  BOOST_TEST(kjit::rtc::gnu_build_id(lib, seen).value_or("") == id.value_or("-"));

  // Another build (one byte of its ID differs), put in its place: another ID, and none for the
  // identity stat()ed before (its versions must not be remembered under the old file's identity).
  put(lib + ".new", elf_with_build_id("0123456789abcdefghiJ"));
  BOOST_TEST_REQUIRE(std::rename((lib + ".new").c_str(), lib.c_str()) == 0);
  BOOST_TEST(kjit::rtc::gnu_build_id(lib).value_or("") == "303132333435363738396162636465666768694a");
  BOOST_TEST(!kjit::rtc::gnu_build_id(lib, seen).has_value());

  // Not an ELF file, a note cut short, a missing file: none.
  put(lib, "#!/bin/sh\n");
  BOOST_TEST(!kjit::rtc::gnu_build_id(lib).has_value());
  put(lib, elf_with_build_id("0123456789abcdefghij").substr(0, 140));
  BOOST_TEST(!kjit::rtc::gnu_build_id(lib).has_value());
  BOOST_TEST(!kjit::rtc::gnu_build_id(tmp.path() + "/none.so").has_value());
}

BOOST_AUTO_TEST_CASE(the_toolkit_libraries_have_build_ids)
{
  // What the fleet's memo is named by: ld writes one (a sha1 of the linked bytes) into each.
  const kjit::rtc::Toolkit toolkit = kjit::rtc::find_toolkit(config);
  const auto nvrtc = kjit::rtc::gnu_build_id(toolkit.nvrtc_path);
  const auto nvjitlink = kjit::rtc::gnu_build_id(toolkit.nvjitlink_path);
  BOOST_TEST(nvrtc.value_or("").size() >= 16u);
  BOOST_TEST(nvjitlink.value_or("").size() >= 16u);
  BOOST_TEST(nvrtc.value_or("") != nvjitlink.value_or(""));
}

BOOST_AUTO_TEST_SUITE_END()
