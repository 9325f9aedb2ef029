// Safety of the cache folder and the mirror: permissions, ownership, symlinks, read-only folders.
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

#include "cache/cache_dir.hpp"
#include "mirror/mirror.hpp"
#include "util/hash.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace kjit::test;

BOOST_FIXTURE_TEST_SUITE(cache_dir, CacheFixture)

BOOST_AUTO_TEST_CASE(created_with_mode_0700)
{
  kjit::Cache cache(config);
  struct stat st {};
  BOOST_TEST_REQUIRE(::stat(config.cache_dir.c_str(), &st) == 0);
  BOOST_TEST((st.st_mode & 0777) == 0700u);
}

BOOST_AUTO_TEST_CASE(group_writable_folder_is_refused_unless_shared)
{
  BOOST_TEST_REQUIRE(::mkdir(config.cache_dir.c_str(), 0700) == 0);
  BOOST_TEST_REQUIRE(::chmod(config.cache_dir.c_str(), 0777) == 0);
  try {
    kjit::Cache cache(config);
    BOOST_FAIL("expected StoreError");
  } catch (const kjit::StoreError& e) {
    BOOST_TEST(std::string(e.what()).find("0777") != std::string::npos, e.what());
    BOOST_TEST(std::string(e.what()).find("KJIT_SHARED_CACHE") != std::string::npos);
  }
  config.shared_cache = true;
  kjit::Cache shared(config);
  BOOST_TEST(shared.writable());
}

// A shared cache's store folder made before (by a private cache, or by hand) becomes the group's:
// setgid, group read-write (a held-out mutant of store.cpp skipped the chmod unnoticed).
BOOST_AUTO_TEST_CASE(a_shared_cache_gives_its_existing_store_folder_to_the_group)
{
  BOOST_TEST_REQUIRE(::mkdir(config.cache_dir.c_str(), 0700) == 0);
  BOOST_TEST_REQUIRE(::mkdir((config.cache_dir + "/store").c_str(), 0700) == 0);
  config.shared_cache = true;
  kjit::Cache shared(config);
  BOOST_TEST(shared.writable());
  struct stat st {};
  BOOST_TEST_REQUIRE(::stat(shared.store_path().c_str(), &st) == 0);
  BOOST_TEST((st.st_mode & 07777) == 02770u);
}

BOOST_AUTO_TEST_CASE(folder_of_another_user_is_refused_unless_shared)
{
  BOOST_TEST_REQUIRE(::mkdir(config.cache_dir.c_str(), 0700) == 0);
  if (::geteuid() == 0) {
    BOOST_TEST_REQUIRE(::chown(config.cache_dir.c_str(), 65534, 65534) == 0);
  } else {
    config.cache_dir = "/";  // owned by root, not by us
  }
  BOOST_CHECK_THROW(kjit::Cache cache(config), kjit::StoreError);
}

BOOST_AUTO_TEST_CASE(a_planted_symlink_in_the_mirror_is_not_followed)
{
  const std::string outside = tmp.path() + "/outside";
  BOOST_TEST_REQUIRE(::mkdir(outside.c_str(), 0700) == 0);
  kjit::Cache cache(config);
  const auto prepared = cache.prepare(small_program("link"), kjit::Arch::parse("sm_90"));
  BOOST_TEST_REQUIRE(::mkdir((config.cache_dir + "/programs").c_str(), 0700) == 0);
  BOOST_TEST_REQUIRE(::symlink(outside.c_str(), (config.cache_dir + "/programs/" + prepared.key()).c_str()) == 0);

  const auto binary = cache.get(prepared);  // the lookup itself is unaffected
  cache.flush_mirror();
  BOOST_TEST(!binary->cubin.empty());
  // The entry is built in a temp folder and exchanged with the link, which is removed unfollowed.
  BOOST_TEST(cache.stats().mirror_errors == 0u);
  BOOST_TEST(!exists(outside + "/program.txt"));
  BOOST_TEST(!exists(outside + "/module"));
  struct stat st {};
  BOOST_TEST_REQUIRE(::lstat((config.cache_dir + "/programs/" + prepared.key()).c_str(), &st) == 0);
  BOOST_TEST(S_ISDIR(st.st_mode));

  // A symlink planted as a file is replaced, not written through.
  const std::string target = tmp.path() + "/victim.txt";
  write_text(target, "keep me");
  ::unlink((config.cache_dir + "/programs/" + prepared.key()).c_str());
  BOOST_TEST(cache.rebuild_mirror() == 1u);
  const std::string ptx = config.cache_dir + "/programs/" + prepared.key() + "/module/kernel.ptx";
  BOOST_TEST_REQUIRE(::unlink(ptx.c_str()) == 0);
  BOOST_TEST_REQUIRE(::symlink(target.c_str(), ptx.c_str()) == 0);
  BOOST_TEST(cache.rebuild_mirror() == 1u);
  BOOST_TEST(read_text(target) == "keep me");
  BOOST_TEST(read_text(ptx) == binary->ptx);
}

BOOST_AUTO_TEST_CASE(header_names_cannot_leave_the_entry_folder)
{
  BOOST_TEST(kjit::mirror::safe_relative_path("../../etc/passwd") == "_up_/_up_/etc/passwd");
  BOOST_TEST(kjit::mirror::safe_relative_path("/abs/x.h") == "abs/x.h");
  BOOST_TEST(kjit::mirror::safe_relative_path("a/./b//c.h") == "a/b/c.h");
  BOOST_TEST(kjit::mirror::safe_relative_path("..") == "_up_");
  BOOST_TEST(kjit::mirror::safe_relative_path("") == "_unnamed_");

  kjit::Cache cache(config);
  kjit::Program program = small_program("escape");
  program.headers["../../../escaped.h"] = "// unused\n";
  const auto prepared = cache.prepare(program, kjit::Arch::parse("sm_90"));
  cache.get(prepared);
  cache.flush_mirror();
  BOOST_TEST(exists(config.cache_dir + "/programs/" + prepared.key() + "/module/headers/_up_/_up_/_up_/escaped.h"));
  BOOST_TEST(!exists(tmp.path() + "/escaped.h"));
  BOOST_TEST(!exists(config.cache_dir + "/escaped.h"));
  BOOST_TEST(!exists(config.cache_dir + "/programs/escaped.h"));
}

BOOST_AUTO_TEST_CASE(damaging_the_mirror_changes_no_lookup_and_rebuild_restores_it)
{
  std::string cubin;
  std::string key;
  {
    kjit::Cache cache(config);
    const auto prepared = cache.prepare(small_program("mirror"), kjit::Arch::parse("sm_90"));
    cubin = cache.get(prepared)->cubin;
    key = prepared.key();
  }
  const std::string entry_dir = config.cache_dir + "/programs/" + key;
  write_text(entry_dir + "/module/kernel.sm_90.cubin", "scribbled");
  write_text(entry_dir + "/options.txt", "scribbled");
  kjit::Cache cache(config);
  BOOST_TEST(cache.get(small_program("mirror"), kjit::Arch::parse("sm_90"))->cubin == cubin);
  BOOST_TEST(cache.stats().disk_hits == 1u);

  std::string output;
  BOOST_TEST_REQUIRE(run("rm -rf '" + config.cache_dir + "/programs'", output) == 0);
  kjit::Cache after_delete(config);
  BOOST_TEST(after_delete.get(small_program("mirror"), kjit::Arch::parse("sm_90"))->cubin == cubin);
  BOOST_TEST(after_delete.stats().disk_hits == 1u);

  BOOST_TEST(after_delete.rebuild_mirror() == 1u);
  BOOST_TEST(read_text(entry_dir + "/module/kernel.sm_90.cubin") == cubin);
  const std::string texts = read_text(entry_dir + "/program.txt") + read_text(entry_dir + "/options.txt");
  BOOST_TEST(kjit::util::to_hex(kjit::util::sha256(texts)) == key);
}

// A store this process can read but not lock (another user's, a folder without write access) may be
// rewritten by its owner at any moment: reading it without the lock would see pages change, so it is
// not read at all (one warning); every lookup is served by a compile kept in memory.
BOOST_AUTO_TEST_CASE(a_store_that_cannot_be_locked_is_not_read_and_lookups_are_served)
{
  const std::string cached = tmp.path() + "/cached.cu";
  const std::string fresh = tmp.path() + "/fresh.cu";
  write_text(cached, small_program("ro_cached").source);
  write_text(fresh, small_program("ro_fresh").source);
  std::string output;
  const std::string probe_path = helper("KJIT_TEST_CACHE_PROBE");
  run("'" + probe_path + "' '" + config.cache_dir + "' '" + cached + "' sm_90", output);
  BOOST_TEST_REQUIRE(output.find("compiles: 1") != std::string::npos, output);

  // Root ignores permission bits, so the probe drops to nobody; for anyone else chmod suffices.
  std::string prefix = "KJIT_SHARED_CACHE=1 ";
  std::string suffix;
  if (::geteuid() == 0) {
    if (run("setpriv --reuid=65534 --regid=65534 --clear-groups ls \"${CUDA_HOME:-/usr/local/cuda}/lib64/\" >/dev/null 2>&1", output) != 0) {
      BOOST_TEST_MESSAGE("skipped: user nobody cannot read the toolkit's libraries here");
      return;
    }
    suffix = " --as-nobody";
    BOOST_TEST_REQUIRE(run("chmod -R a+rX,go-w '" + tmp.path() + "'", output) == 0);
  } else {
    BOOST_TEST_REQUIRE(run("chmod -R a-w '" + config.cache_dir + "'", output) == 0);
  }
  const std::string before = read_text(config.cache_dir + "/store/data.mdb");
  BOOST_TEST_REQUIRE(run(prefix + "'" + probe_path + "' '" + config.cache_dir + "' '" + cached + "' sm_90" + suffix,
                         output) == 0,
                     output);
  BOOST_TEST(output.find("result: ok") != std::string::npos, output);
  BOOST_TEST(output.find("disk_hits: 0") != std::string::npos, output);
  BOOST_TEST(output.find("writable: 0") != std::string::npos, output);
  BOOST_TEST(run(prefix + "'" + probe_path + "' '" + config.cache_dir + "' '" + fresh + "' sm_90" + suffix, output) ==
               0,
             output);
  BOOST_TEST(output.find("result: ok") != std::string::npos, output);
  BOOST_TEST(output.find("compiles: 1") != std::string::npos, output);
  BOOST_TEST(read_text(config.cache_dir + "/store/data.mdb") == before);
}

namespace {

// Runs `command` as user nobody (setpriv) when root; false (and a message) when that is impossible.
bool as_nobody(const std::string& command)
{
  std::string output;
  if (::geteuid() != 0) {
    return false;
  }
  return run("setpriv --reuid=65534 --regid=65534 --clear-groups sh -c '" + command + "'", output) == 0;
}

} // namespace

BOOST_AUTO_TEST_CASE(a_store_planted_by_another_user_is_never_used)
{
  if (::geteuid() != 0) {
    BOOST_TEST_MESSAGE("skipped: the attacker is user nobody, which needs root");
    return;
  }
  // A window in which the folder was world-writable: nobody plants store/ (and a file in it).
  std::string output;
  BOOST_TEST_REQUIRE(run("chmod 755 '" + tmp.path() + "'", output) == 0);
  BOOST_TEST_REQUIRE(::mkdir(config.cache_dir.c_str(), 0777) == 0);
  BOOST_TEST_REQUIRE(::chmod(config.cache_dir.c_str(), 0777) == 0);
  BOOST_TEST_REQUIRE(as_nobody("mkdir -m 777 " + config.cache_dir + "/store && touch " + config.cache_dir + "/store/data.mdb"));
  BOOST_TEST_REQUIRE(::chmod(config.cache_dir.c_str(), 0700) == 0);  // the owner fixes the folder
  kjit::Cache cache(config);
  BOOST_TEST(!cache.has_disk_tier());  // was: the planted store was opened and served
  BOOST_TEST(!cache.get(small_program("planted"), kjit::Arch::parse("sm_90"))->cubin.empty());
}

BOOST_AUTO_TEST_CASE(a_store_symlink_inside_a_private_folder_is_never_followed)
{
  const std::string elsewhere = tmp.path() + "/elsewhere";
  BOOST_TEST_REQUIRE(::mkdir(elsewhere.c_str(), 0700) == 0);
  BOOST_TEST_REQUIRE(::mkdir(config.cache_dir.c_str(), 0700) == 0);
  BOOST_TEST_REQUIRE(::symlink(elsewhere.c_str(), (config.cache_dir + "/store").c_str()) == 0);
  kjit::Cache cache(config);
  BOOST_TEST(!cache.has_disk_tier());
  cache.get(small_program("symlinked_store"), kjit::Arch::parse("sm_90"));
  BOOST_TEST(!exists(elsewhere + "/data.mdb"));  // was: the store was created through the link
}

BOOST_AUTO_TEST_CASE(a_linked_or_foreign_store_file_is_refused)
{
  kjit::Cache(config).get(small_program("linked"), kjit::Arch::parse("sm_90"));
  const std::string data = config.cache_dir + "/store/data.mdb";
  BOOST_TEST_REQUIRE(::link(data.c_str(), (tmp.path() + "/second-name").c_str()) == 0);
  kjit::Cache cache(config);
  BOOST_TEST(!cache.has_disk_tier());  // two names: someone else may hold the other one
}

BOOST_AUTO_TEST_CASE(a_parent_others_can_write_is_refused_unless_sticky)
{
  const std::string parent = tmp.path() + "/open";
  BOOST_TEST_REQUIRE(::mkdir(parent.c_str(), 0777) == 0);
  BOOST_TEST_REQUIRE(::chmod(parent.c_str(), 0777) == 0);
  config.cache_dir = parent + "/cache";
  BOOST_CHECK_THROW(kjit::Cache cache(config), kjit::StoreError);  // was accepted: the folder could be swapped
  BOOST_TEST_REQUIRE(::chmod(parent.c_str(), 01777) == 0);  // sticky, as /tmp
  kjit::Cache cache(config);
  BOOST_TEST(cache.has_disk_tier());
}

BOOST_AUTO_TEST_CASE(a_node_local_folder_of_another_owner_or_mode_is_refused)
{
  const std::string folder = tmp.path() + "/kjit-uid";
  BOOST_TEST_REQUIRE(::mkdir(folder.c_str(), 0700) == 0);
  kjit::util::UniqueFd fd(::open(folder.c_str(), O_RDONLY | O_DIRECTORY));
  BOOST_TEST(kjit::cache::private_folder_problem(fd.get(), false, true).empty());
  BOOST_TEST_REQUIRE(::chmod(folder.c_str(), 0755) == 0);
  BOOST_TEST(!kjit::cache::private_folder_problem(fd.get(), false, true).empty());
  BOOST_TEST_REQUIRE(::chmod(folder.c_str(), 0777) == 0);
  BOOST_TEST(!kjit::cache::private_folder_problem(fd.get(), false, true).empty());
  if (::geteuid() == 0) {
    BOOST_TEST_REQUIRE(::chmod(folder.c_str(), 0700) == 0);
    BOOST_TEST_REQUIRE(::chown(folder.c_str(), 65534, 65534) == 0);
    BOOST_TEST(kjit::cache::private_folder_problem(fd.get(), false, true).find("uid 65534") != std::string::npos);
  }
}

// A store file of a private cache that group or others may write, or that belongs to another
// user, is refused as the folder would be: whoever can write data.mdb can plant a binary under any
// key (a record's checksums are no signature). Both were opened and served (surviving mutants,
// docs/testing.md); the nlink check above was the only one of the file checks a test made.
BOOST_AUTO_TEST_CASE(a_store_file_others_can_write_or_own_is_refused)
{
  kjit::Cache(config).get(small_program("owned"), kjit::Arch::parse("sm_90"));
  const std::string data = config.cache_dir + "/store/data.mdb";
  for (const mode_t mode : {0620, 0602, 0666}) {
    BOOST_TEST_REQUIRE(::chmod(data.c_str(), mode) == 0);
    kjit::Cache cache(config);
    BOOST_TEST(!cache.has_disk_tier(), "mode " << std::oct << mode);
  }
  BOOST_TEST_REQUIRE(::chmod(data.c_str(), 0600) == 0);
  BOOST_TEST(kjit::Cache(config).has_disk_tier());  // the same file, as kjit makes it: used
  if (::geteuid() == 0) {
    BOOST_TEST_REQUIRE(::chown(data.c_str(), 65534, 65534) == 0);
    kjit::Cache cache(config);
    BOOST_TEST(!cache.has_disk_tier());  // another user's data.mdb in my folder
  } else {
    BOOST_TEST_MESSAGE("skipped: a data.mdb of another owner needs root");
  }
}

// Issue 36: a compile's private include folder lives in /dev/shm when that is a roomy tmpfs
// (making and removing 1 691 links there costs next to nothing; on ext4 ≈ 1 s). A process killed
// while it compiled leaves its folder in memory: the next process removes the folders whose
// process is gone, without following the links into the user's headers, and keeps the others.
BOOST_AUTO_TEST_CASE(private_folders_of_dead_processes_are_removed_not_followed)
{
  const std::string parent = tmp.path() + "/shm";
  const std::string prefix = "kjit-includes-";
  put(tmp.path() + "/user/h.h", "#define H 1\n");
  const pid_t child = ::fork();
  BOOST_TEST_REQUIRE(child >= 0);
  if (child == 0) {
    ::_exit(0);
  }
  BOOST_TEST_REQUIRE(::waitpid(child, nullptr, 0) == child);  // gone: its pid names no process
  const std::string dead = parent + "/" + prefix + std::to_string(child) + "-abc123";
  const std::string alive = parent + "/" + prefix + std::to_string(::getpid()) + "-def456";
  for (const auto& folder : {dead, alive}) {
    put(folder + "/copy.h", "#define C 1\n");
    BOOST_TEST_REQUIRE(::symlink((tmp.path() + "/user/h.h").c_str(), (folder + "/h.h").c_str()) == 0);
  }
  kjit::cache::remove_dead_folders(parent, prefix);
  struct stat st {};
  BOOST_TEST(::lstat(dead.c_str(), &st) != 0);
  BOOST_TEST(::lstat(alive.c_str(), &st) == 0);
  BOOST_TEST(read_text(tmp.path() + "/user/h.h") == "#define H 1\n");  // the link's target stays
}

BOOST_AUTO_TEST_CASE(private_folders_go_to_a_roomy_dev_shm_unless_tmpdir_is_set)
{
  const pid_t child = ::fork();
  BOOST_TEST_REQUIRE(child >= 0);
  if (child == 0) {
    int code = 0;
    try {
      ::unsetenv("TMPDIR");
      struct statfs fs {};
      const bool roomy = ::statfs("/dev/shm", &fs) == 0 && fs.f_type == TMPFS_MAGIC &&
                         static_cast<unsigned long long>(fs.f_bavail) * fs.f_bsize >= (256ULL << 20) &&
                         ::access("/dev/shm", W_OK) == 0;
      {
        const kjit::cache::TempFolder memory("kjit-includes-", "a test folder", true);
        const std::string want = roomy ? "/dev/shm/kjit-includes-" + std::to_string(::getpid()) + "-" : "/tmp/kjit-includes-";
        code = memory.path().rfind(want, 0) == 0 ? code : 1;
      }
      ::setenv("TMPDIR", "/tmp", 1);
      const kjit::cache::TempFolder chosen("kjit-includes-", "a test folder", true);
      code = chosen.path().rfind("/tmp/kjit-includes-", 0) == 0 ? code : 2;
    } catch (...) {
      code = 3;
    }
    ::_exit(code);
  }
  int status = 0;
  BOOST_TEST_REQUIRE(::waitpid(child, &status, 0) == child);
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0), status);
}

BOOST_AUTO_TEST_SUITE_END()
