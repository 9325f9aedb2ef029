// The store under real conditions: address-space limits, long names, racing opens and closes,
// late quarantines, shared folders, stores that can't be opened, and mirror names.
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

#include "mirror/mirror.hpp"
#include "store/check.hpp"
#include "store/store.hpp"
#include "util/hash.hpp"

#include <atomic>
#include <cstdio>
#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <lmdb.h>
#include <functional>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <tuple>
#include <unistd.h>

using namespace kjit::test;

namespace {

const kjit::Arch k_sm90 = kjit::Arch::parse("sm_90");

int child_status(pid_t child)
{
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

std::size_t virtual_size()
{
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0;
  statm >> pages;
  return pages * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

// Caps this process's address space (soft and hard) at what it maps now plus `headroom`;
// returns the cap.
rlim_t limit_address_space(std::size_t headroom)
{
  const rlim_t limit = virtual_size() + headroom;
  struct rlimit as {limit, limit};
  ::setrlimit(RLIMIT_AS, &as);
  return limit;
}

// How many descriptors of this process are open on the file `path` names.
std::size_t descriptors_of(const std::string& path)
{
  std::size_t n = 0;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code error;
    n += std::filesystem::read_symlink(fd.path(), error) == path ? 1 : 0;
  }
  return n;
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(store_limits, CacheFixture)

BOOST_AUTO_TEST_CASE(a_map_that_cannot_grow_under_ulimit_v_is_survived)
{
  // In a child under RLIMIT_AS: 4 MiB records until the map can't grow. The failed growth must
  // be a StoreError, and the store must go on serving (it used to be a SIGSEGV on the next get).
  const std::string dir = config.cache_dir + "/store";
  const pid_t child = ::fork();
  if (child == 0) {
    limit_address_space(std::size_t(200) << 20);
    int failures = 0;
    try {
      auto store = kjit::store::Store::open(dir, std::size_t(8) << 20);
      const std::string big(4 << 20, 'x');
      int stored = 0;
      for (int i = 0; i < 100 && failures < 3; ++i) {
        try {
          store->put(kjit::store::Table::entries, "key" + std::to_string(i), big);
          ++stored;
        } catch (const kjit::StoreError&) {
          ++failures;
          // The store is still usable after the failure.
          if (store->get(kjit::store::Table::entries, "key0") != big && stored > 0) {
            ::_exit(4);
          }
        }
      }
      store->put(kjit::store::Table::meta, "small", "value");  // a small write still fits or throws cleanly
    } catch (const kjit::StoreError&) {
    }
    ::_exit(failures > 0 ? 0 : 5);  // 5: the limit was never reached (the test proves nothing)
  }
  BOOST_TEST(child_status(child) == 0);  // was 139 (SIGSEGV)
}

// A host under an address-space limit (ulimit -v) of about 1.2 GB, with the default 1 GiB map: a
// miss is compiled and stored (issue 38). Before, the map took all but ≈ 200 MB, NVRTC could not be
// loaded in the rest, and the error advised setting KJIT_CUDA_HOME: no binary at all. The map is
// now fitted to the room the process has.
BOOST_AUTO_TEST_CASE(a_miss_under_a_1_2_gb_address_space_limit_is_compiled_and_stored)
{
  config.store_map_size = std::size_t(1) << 30;
  const pid_t child = ::fork();
  if (child == 0) {
    limit_address_space(std::size_t(1150) << 20);
    try {
      kjit::Cache cache(config);
      const auto binary = cache.get(small_program("under_limit"), kjit::Arch::parse("sm_90"));
      ::_exit(binary->cubin.empty() ? 3 : !cache.has_disk_tier() ? 4 : cache.disk_entries() != 1 ? 5 : 0);
    } catch (const kjit::Error& e) {
      std::fprintf(stderr, "under the limit: %s\n", e.what());
      ::_exit(6);
    }
  }
  BOOST_TEST(child_status(child) == 0);  // was 6: "cannot load NVRTC … (set KJIT_CUDA_HOME …)"
}

// A host under an address-space limit (ulimit -v) with less room left than its store's map: the
// walk before its first write maps what data.mdb holds, not the whole map again, and the sound store
// is written. Before, the walk's child could not map it (ENOMEM), which counted as damage: the
// store was moved aside, by every such process whose first write found the stamp stale.
BOOST_AUTO_TEST_CASE(a_walk_under_an_address_space_limit_does_not_move_the_store_aside)
{
  const std::string dir = config.cache_dir + "/store";
  kjit::store::Store::open(dir, config.store_map_size)->put(kjit::store::Table::meta, "kept", "1");
  BOOST_TEST_REQUIRE(::unlink((dir + "/checked").c_str()) == 0);  // the next first write walks it
  const pid_t child = ::fork();
  if (child == 0) {
    auto store = kjit::store::Store::open(dir, std::size_t(1) << 30);
    limit_address_space(std::size_t(256) << 20);  // less than the map
    try {
      store->put(kjit::store::Table::meta, "written", "1");
    } catch (const kjit::StoreError&) {
      ::_exit(3);
    }
    const bool kept = store->get(kjit::store::Table::meta, "kept").value_or("") == "1";
    ::_exit(store->walks() != 1 ? 4 : store->replacements() != 0 ? 5 : kept ? 0 : 6);
  }
  BOOST_TEST(child_status(child) == 0);  // was 5 (moved aside)
}

// The same with less room left than data.mdb holds: the walk can't map it at all (ENOMEM), which
// says nothing about the store. Not checked, it is written as when no child can be started;
// before, it was moved aside as damaged.
BOOST_AUTO_TEST_CASE(a_walk_that_cannot_map_the_store_does_not_move_it_aside)
{
  const std::string dir = config.cache_dir + "/store";
  {
    auto store = kjit::store::Store::open(dir, config.store_map_size);
    for (int i = 0; i < 16; ++i) {
      store->put(kjit::store::Table::entries, "big" + std::to_string(i), std::string(std::size_t(4) << 20, 'b'));
    }
    store->put(kjit::store::Table::meta, "kept", "1");
  }
  BOOST_TEST_REQUIRE(::unlink((dir + "/checked").c_str()) == 0);  // the next first write walks it
  const pid_t child = ::fork();
  if (child == 0) {
    auto store = kjit::store::Store::open(dir, std::size_t(1) << 30);
    limit_address_space(std::size_t(32) << 20);  // less than data.mdb holds
    try {
      store->put(kjit::store::Table::meta, "written", "1");
    } catch (const kjit::StoreError&) {
      ::_exit(3);
    }
    const bool kept = store->get(kjit::store::Table::meta, "kept").value_or("") == "1" &&
                      store->get(kjit::store::Table::meta, "written").value_or("") == "1";
    if (store->walks() != 1 || store->replacements() != 0 || !kept) {
      ::_exit(store->walks() != 1 ? 4 : store->replacements() != 0 ? 5 : 6);
    }
    std::string report;  // `kjit verify`'s check says so, and nothing else
    const bool sound = kjit::Cache(config).check_store(report);
    ::_exit(!sound && report.find("not checked") != std::string::npos && report.find("moved aside") == std::string::npos ? 0 : 7);
  }
  BOOST_TEST(child_status(child) == 0);  // was 5 (moved aside); then 7 (its report said "moved aside and replaced")
}

// `kjit doctor` (kjit::diagnose) when the store's walk can't run (no memory to map it): no
// verdict, a warning that says so; before, an error calling the store "damaged (not checked: …)".
BOOST_AUTO_TEST_CASE(a_store_the_doctor_could_not_walk_is_not_called_damaged)
{
  {
    kjit::Cache cache(config);
    cache.get(small_program("walked"), k_sm90);
  }
  {
    auto store = kjit::store::Store::open(config.cache_dir + "/store", config.store_map_size);
    for (int i = 0; i < 16; ++i) {
      store->put(kjit::store::Table::meta, "big" + std::to_string(i), std::string(std::size_t(4) << 20, 'b'));
    }
  }
  const pid_t child = ::fork();
  if (child == 0) {
    std::ignore = kjit::diagnose(config);  // NVRTC and the driver probe loaded before the limit
    kjit::Cache holder(config);            // the store mapped before it too (diagnose's Cache shares it)
    limit_address_space(std::size_t(32) << 20);  // less than data.mdb holds
    for (const kjit::HealthCheck& check : kjit::diagnose(config)) {
      if (check.what == "store") {
        const bool said = check.detail.find("not checked") != std::string::npos &&
                          check.detail.find("damaged") == std::string::npos;
        ::_exit(!said ? 4 : check.status != kjit::HealthCheck::Status::warning ? 5 : 0);
      }
    }
    ::_exit(3);
  }
  BOOST_TEST(child_status(child) == 0);  // was 4 ("damaged (not checked: …)", an error)
}

// A store that holds data but none of kjit's tables (another format, or damage hiding them) is
// walked, isolated, before its tables are made. Under an address-space limit the walk can't map it
// (ENOMEM): no verdict, so the store is left as it is and not used (a StoreError). Before, the
// walk's failure read as damage and the sound store was moved aside.
BOOST_AUTO_TEST_CASE(a_store_without_tables_whose_walk_cannot_map_it_is_not_moved_aside)
{
  const std::string dir = config.cache_dir + "/store";
  std::filesystem::create_directories(dir);
  {
    MDB_env* env = nullptr;
    BOOST_TEST_REQUIRE(mdb_env_create(&env) == 0);
    mdb_env_set_maxdbs(env, 4);
    mdb_env_set_mapsize(env, std::size_t(256) << 20);
    BOOST_TEST_REQUIRE(mdb_env_open(env, dir.c_str(), 0, 0600) == 0);
    MDB_txn* txn = nullptr;
    MDB_dbi dbi = 0;
    BOOST_TEST_REQUIRE(mdb_txn_begin(env, nullptr, 0, &txn) == 0);
    BOOST_TEST_REQUIRE(mdb_dbi_open(txn, "not_kjit", MDB_CREATE, &dbi) == 0);
    std::string big(std::size_t(4) << 20, 'b');
    for (int i = 0; i < 16; ++i) {
      const std::string key = "big" + std::to_string(i);
      MDB_val k{key.size(), const_cast<char*>(key.data())};
      MDB_val v{big.size(), big.data()};
      BOOST_TEST_REQUIRE(mdb_put(txn, dbi, &k, &v, 0) == 0);
    }
    BOOST_TEST_REQUIRE(mdb_txn_commit(txn) == 0);
    mdb_env_close(env);
  }
  const pid_t child = ::fork();
  if (child == 0) {
    const std::size_t map = std::size_t(256) << 20;
    // Room for data.mdb's 64 MiB once (the map, fitted to the room, is raised to it), not twice:
    // the walk's child can't map it again.
    limit_address_space(std::size_t(100) << 20);
    bool opened = false;
    try {
      opened = kjit::store::Store::open(dir, map) != nullptr;
    } catch (const kjit::StoreError&) {
    }

    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(config.cache_dir, error)) {
      if (entry.path().filename().string().rfind("store.damaged", 0) == 0) {
        ::_exit(4);  // moved aside (and a fresh store opened in its place)
      }
    }
    ::_exit(opened ? 3 : std::filesystem::exists(dir + "/data.mdb") ? 0 : 5);  // 3: tables made unwalked
  }
  BOOST_TEST(child_status(child) == 0);  // was 4 (moved aside)
}

BOOST_AUTO_TEST_CASE(growth_is_bounded_by_the_address_space_limit)
{
  const pid_t child = ::fork();
  if (child == 0) {
    const rlim_t limit = limit_address_space(std::size_t(300) << 20);
    auto store = kjit::store::Store::open(config.cache_dir + "/store", std::size_t(1) << 20);
    const std::string big(1 << 20, 'y');
    for (int i = 0; i < 400; ++i) {
      try {
        store->put(kjit::store::Table::entries, "k" + std::to_string(i), big);
      } catch (const kjit::StoreError& e) {
        break;
      }
    }
    ::_exit(store->map_size() <= limit ? 0 : 6);
  }
  BOOST_TEST(child_status(child) == 0);
}

BOOST_AUTO_TEST_CASE(a_program_name_longer_than_the_key_limit_is_cached)
{
  kjit::Program program = small_program("long_name");
  program.name = std::string(600, 'n') + ".cu";
  std::string cubin;
  {
    kjit::Cache cache(config);
    cubin = cache.get(program, k_sm90)->cubin;  // was MDB_BAD_VALSIZE after every compile
    BOOST_TEST(cache.disk_entries() == 1u);
  }
  kjit::Cache again(config);
  BOOST_TEST(again.get(program, k_sm90)->cubin == cubin);
  BOOST_TEST(again.stats().disk_hits == 1u);
  program.source += "// changed\n";
  const kjit::MissExplanation why = again.explain(program, k_sm90);
  BOOST_TEST(!why.closest_key.empty());  // the name index still finds it
}

BOOST_AUTO_TEST_CASE(dropping_the_last_reference_while_another_thread_opens_keeps_one_environment)
{
  const std::string dir = config.cache_dir + "/store";
  kjit::store::Store::open(dir, config.store_map_size);
  for (int round = 0; round < 200; ++round) {
    auto first = kjit::store::Store::open(dir, config.store_map_size);
    std::thread dropper([&first] { first.reset(); });
    auto second = kjit::store::Store::open(dir, config.store_map_size);
    dropper.join();
    // The process must still hold LMDB's shared lock on lock.mdb: another process can't take it
    // exclusively (closing a second environment on the file used to drop it).
    const pid_t child = ::fork();
    if (child == 0) {
      const int fd = ::open((dir + "/lock.mdb").c_str(), O_RDWR);
      struct flock lock {};
      lock.l_type = F_WRLCK;
      lock.l_whence = SEEK_SET;
      lock.l_len = 1;
      ::_exit(fd >= 0 && ::fcntl(fd, F_SETLK, &lock) != 0 ? 0 : 7);
    }
    const int status = child_status(child);
    BOOST_TEST_REQUIRE(status == 0, "round " << round);
    BOOST_TEST(!second->get(kjit::store::Table::meta, "absent").has_value());
  }
}

// A damaged store replaced (moved aside, a fresh one opened: recover()) while another thread opens
// it: the open finds the replacing store, never opens a second environment on the fresh file
// (LMDB's rule; the open took the file as unused, as the first opener of lock.mdb, and its
// environment was left open, leaked, on every such race).
BOOST_AUTO_TEST_CASE(a_store_replaced_while_another_thread_opens_it_keeps_one_environment)
{
  for (int round = 0; round < 100; ++round) {
    const std::string dir = tmp.path() + "/replaced" + std::to_string(round);
    auto store = kjit::store::Store::open(dir, config.store_map_size);
    const std::size_t one = descriptors_of(dir + "/data.mdb");  // one environment's (LMDB opens two)
    BOOST_TEST_REQUIRE(one > 0u);
    store->put(kjit::store::Table::meta, "row", std::string(std::size_t(64) << 10, 'x'));
    BOOST_TEST_REQUIRE(::truncate((dir + "/data.mdb").c_str(), 2 * 4096) == 0);  // its walk fails
    std::atomic<bool> replaced{false};
    std::thread opener([&] {
      while (!replaced) {
        try {
          std::ignore = kjit::store::Store::open(dir, config.store_map_size);
        } catch (const kjit::StoreError&) {
        }
      }
    });
    BOOST_TEST_REQUIRE(!store->check(true).ok);  // moved aside, a fresh store opened
    replaced = true;
    opener.join();
    const std::size_t open = descriptors_of(dir + "/data.mdb");
    BOOST_TEST_REQUIRE(open == one, "round " << round << ": " << open << " descriptors");
    BOOST_TEST_REQUIRE(kjit::store::Store::open(dir, config.store_map_size).get() == store.get());
  }
}

// A check (the walk in a child process) beside other processes that keep committing and growing
// the store finds it sound. Its walk failed with MDB_MAP_RESIZED when a commit grew the file between
// the walk's open and its transaction (8 checks in 200 beside two writers), and a failed check
// with repair (before a first write, `kjit verify`) moved the sound store aside: the cache lost.
BOOST_AUTO_TEST_CASE(a_check_beside_writers_growing_the_store_finds_it_sound)
{
  const std::string dir = tmp.path() + "/growing";
  auto store = kjit::store::Store::open(dir, std::size_t(64) << 10);
  store->put(kjit::store::Table::meta, "made", "1");
  std::vector<pid_t> writers;
  for (int writer = 0; writer < 2; ++writer) {
    const pid_t child = ::fork();
    BOOST_TEST_REQUIRE(child >= 0);
    if (child == 0) {
      ::alarm(120);
      auto own = kjit::store::Store::open(dir, std::size_t(64) << 10);
      for (int row = 0;; ++row) {  // until killed
        own->put(kjit::store::Table::meta, std::to_string(writer) + "/" + std::to_string(row),
                 std::string(std::size_t(64) << 10, 'w'));
      }
    }
    writers.push_back(child);
  }
  int failed = 0;
  std::string detail;
  for (int check = 0; check < 150; ++check) {
    const kjit::store::CheckReport report = store->check(false);
    failed += report.ok ? 0 : 1;
    detail = report.ok ? detail : report.detail;
  }
  for (const pid_t writer : writers) {
    ::kill(writer, SIGKILL);
    child_status(writer);
  }
  BOOST_TEST(failed == 0, failed << " failed checks: " << detail);
}

// A commit by another process between the check's two measures of the file, its last page and
// its size, grows both. Measured size first, the check found a sound store "shorter than its last
// page" (1 check in ≈ 150 beside two writers, a CI run of the test above), and a check with repair
// would have moved it aside. The commit is made there, every time, by a test hook.
BOOST_AUTO_TEST_CASE(a_commit_between_the_checks_measures_of_the_file_leaves_it_sound)
{
  const std::string dir = tmp.path() + "/measured";
  auto store = kjit::store::Store::open(dir, std::size_t(64) << 10);
  store->put(kjit::store::Table::meta, "made", "1");
  const auto size_before = std::filesystem::file_size(dir + "/data.mdb");
  kjit::store::set_measure_hook([&dir] {
    const pid_t writer = ::fork();
    if (writer == 0) {
      auto own = kjit::store::Store::open(dir, std::size_t(64) << 10);
      own->put(kjit::store::Table::meta, "grown/" + std::to_string(::getpid()), std::string(std::size_t(1) << 20, 'g'));
      std::_Exit(0);
    }
    child_status(writer);
  });
  const kjit::store::CheckReport report = store->check(false);
  kjit::store::set_measure_hook({});
  BOOST_TEST(report.ok, report.detail);
  // The hook's commits were made (in the check's process, between its measures): the file grew.
  BOOST_TEST(std::filesystem::file_size(dir + "/data.mdb") >= size_before + (std::size_t(1) << 20));
}

BOOST_AUTO_TEST_CASE(a_late_quarantine_leaves_a_record_stored_meanwhile)
{
  auto store = kjit::store::Store::open(config.cache_dir + "/store", config.store_map_size);
  const std::string key(32, 'k');
  store->put(kjit::store::Table::entries, key, "the damaged bytes this process read");
  store->put(kjit::store::Table::entries, key, "a good record another process stored");
  BOOST_TEST(store->quarantine(key, "the damaged bytes this process read", "test"));
  BOOST_TEST(store->get(kjit::store::Table::entries, key).value_or("") == "a good record another process stored");
  BOOST_TEST(store->count(kjit::store::Table::quarantine) == 0u);
  // Still the damaged bytes: moved aside.
  BOOST_TEST(store->quarantine(key, "a good record another process stored", "test"));
  BOOST_TEST(!store->get(kjit::store::Table::entries, key).has_value());
  BOOST_TEST(store->count(kjit::store::Table::quarantine) == 1u);
}

// A damaged record quarantined while the map has no room for its quarantine row (the map grows
// only when full): the quarantine grows the map, and only that record leaves the store. Before,
// the quarantine's write failed (MDB_MAP_FULL), which counted as damage around the record: the
// whole store was moved aside.
BOOST_AUTO_TEST_CASE(a_quarantine_in_a_full_map_moves_only_the_record_aside)
{
  auto store = kjit::store::Store::open(config.cache_dir + "/store", std::size_t(64) << 10);
  const std::string key(32, 'k');
  const std::string damaged(std::size_t(40) << 10, 'd');
  store->put(kjit::store::Table::meta, "kept", "1");
  store->put(kjit::store::Table::entries, key, damaged);
  BOOST_TEST(store->quarantine(key, damaged, "test"));
  BOOST_TEST(store->replacements() == 0u);
  BOOST_TEST(store->count(kjit::store::Table::quarantine) == 1u);
  BOOST_TEST(!store->get(kjit::store::Table::entries, key).has_value());
  BOOST_TEST(store->get(kjit::store::Table::meta, "kept").value_or("") == "1");
}

BOOST_AUTO_TEST_CASE(the_quarantine_table_is_trimmed)
{
  auto store = kjit::store::Store::open(config.cache_dir + "/store", config.store_map_size);
  for (std::size_t i = 0; i < kjit::store::k_quarantine_rows + 5; ++i) {
    const std::string key = "key" + std::to_string(i);
    store->put(kjit::store::Table::entries, key, "bad");
    store->quarantine(key, "bad", "test");
  }
  BOOST_TEST(store->count(kjit::store::Table::quarantine) == kjit::store::k_quarantine_rows);
}

BOOST_AUTO_TEST_CASE(a_shared_cache_is_usable_by_another_member_of_its_group)
{
  if (::geteuid() != 0) {
    BOOST_TEST_MESSAGE("skipped: a second user needs root (setuid to nobody)");
    return;
  }
  // The folder belongs to root's group 65534 (nogroup), as a team folder would; nobody is a member.
  std::string output;
  if (run("setpriv --reuid=65534 --regid=65534 --clear-groups ls \"${CUDA_HOME:-/usr/local/cuda}/lib64/\" >/dev/null 2>&1", output) != 0) {
    BOOST_TEST_MESSAGE("skipped: user nobody cannot read the toolkit's libraries here");
    return;
  }
  BOOST_TEST_REQUIRE(run("chmod 755 '" + tmp.path() + "'", output) == 0);
  BOOST_TEST_REQUIRE(::mkdir(config.cache_dir.c_str(), 02770) == 0);
  BOOST_TEST_REQUIRE(::chown(config.cache_dir.c_str(), 0, 65534) == 0);
  BOOST_TEST_REQUIRE(::chmod(config.cache_dir.c_str(), 02770) == 0);
  const std::string first = tmp.path() + "/first.cu";
  const std::string second = tmp.path() + "/second.cu";
  write_text(first, small_program("shared_first").source);
  write_text(second, small_program("shared_second").source);
  ::chmod(first.c_str(), 0644);
  ::chmod(second.c_str(), 0644);
  const std::string probe = "KJIT_SHARED_CACHE=1 '" + helper("KJIT_TEST_CACHE_PROBE") + "' '" + config.cache_dir + "' ";
  BOOST_TEST_REQUIRE(run(probe + "'" + first + "' sm_90", output) == 0, output);  // root creates the store
  BOOST_TEST(run(probe + "'" + second + "' sm_90 --as-nobody", output) == 0, output);  // was "Permission denied"
  BOOST_TEST(output.find("writable: 1") != std::string::npos, output);
  BOOST_TEST(run(probe + "'" + second + "' sm_90 --as-nobody", output) == 0, output);
  BOOST_TEST(output.find("disk_hits: 1") != std::string::npos, output);  // nobody wrote into root's store
  struct stat st {};
  BOOST_TEST_REQUIRE(::stat((config.cache_dir + "/store/data.mdb").c_str(), &st) == 0);
  BOOST_TEST((st.st_mode & 0777) == 0660u);
}

BOOST_AUTO_TEST_CASE(a_store_that_cannot_be_opened_runs_from_memory)
{
  BOOST_TEST_REQUIRE(::mkdir(config.cache_dir.c_str(), 0700) == 0);
  write_text(config.cache_dir + "/store", "not a folder");
  std::vector<std::string> lines;
  kjit::set_log_sink([&lines](std::string_view line) { lines.emplace_back(line); });
  try {
    kjit::Cache cache(config);  // used to throw StoreError from the constructor
    BOOST_TEST(!cache.has_disk_tier());
    BOOST_TEST(!cache.get(small_program("memory_only"), k_sm90)->cubin.empty());
    BOOST_TEST(cache.get(small_program("memory_only"), k_sm90)->cubin.size() > 0u);
    BOOST_TEST(cache.stats().memory_hits == 1u);
  } catch (const std::exception& e) {
    BOOST_FAIL(e.what());
  }
  kjit::set_log_sink({});
  BOOST_TEST(lines.size() == 1u);
}

// A map larger than the address space left (ulimit -v) is fitted to it: the store is used (issue
// 38; before, a map that could not be allocated left the cache memory-only).
BOOST_AUTO_TEST_CASE(a_map_larger_than_the_address_space_left_is_fitted_to_it)
{
  config.store_map_size = std::size_t(1) << 46;  // 64 TiB: more than the address space allows
  const pid_t child = ::fork();
  if (child == 0) {
    limit_address_space(std::size_t(1) << 30);
    kjit::Cache cache(config);
    ::_exit(cache.has_disk_tier() ? 0 : 8);
  }
  BOOST_TEST(child_status(child) == 0);
}

// A store whose data does not fit in the address space left: the map can't be made, and the
// warning names the limit and the setting.
BOOST_AUTO_TEST_CASE(a_store_that_cannot_be_mapped_names_the_limit_and_the_setting)
{
  const std::string dir = config.cache_dir + "/store";
  {
    auto store = kjit::store::Store::open(dir, config.store_map_size);
    store->put(kjit::store::Table::meta, "big", std::string(std::size_t(96) << 20, 'b'));
  }
  std::vector<std::string> lines;
  kjit::set_log_sink([&lines](std::string_view line) { lines.emplace_back(line); });
  const pid_t child = ::fork();
  if (child == 0) {
    limit_address_space(std::size_t(48) << 20);
    kjit::Cache cache(config);
    const bool named = !lines.empty() && lines[0].find("KJIT_STORE_MAP_SIZE") != std::string::npos &&
                       lines[0].find("ulimit -v) of ") != std::string::npos;
    if (!named && !lines.empty()) {
      std::fprintf(stderr, "%s\n", lines[0].c_str());
    }
    ::_exit(!cache.has_disk_tier() && named ? 0 : 8);
  }
  kjit::set_log_sink({});
  BOOST_TEST(child_status(child) == 0);
}

BOOST_AUTO_TEST_CASE(header_names_that_cannot_be_files_are_mirrored)
{
  kjit::Cache cache(config);
  kjit::Program program = small_program("mirror_names");
  program.headers["cfg"] = "// a file\n";
  program.headers["cfg/detail.h"] = "// a file in a folder of the same name\n";
  program.headers[std::string(240, 'h') + ".h"] = "// a long name\n";
  const auto prepared = cache.prepare(program, k_sm90);
  cache.get(prepared);
  cache.flush_mirror();
  BOOST_TEST(cache.stats().mirror_errors == 0u);  // was 1 (ENOTDIR, ENAMETOOLONG)
  const std::string headers = config.cache_dir + "/programs/" + prepared.key() + "/module/headers/";
  BOOST_TEST(read_text(headers + "cfg~") == "// a file\n");
  BOOST_TEST(read_text(headers + "cfg/detail.h") == "// a file in a folder of the same name\n");
  const auto paths = kjit::mirror::header_paths(program.headers);
  BOOST_TEST(read_text(headers + paths.at(std::string(240, 'h') + ".h")) == "// a long name\n");
  BOOST_TEST(paths.at(std::string(240, 'h') + ".h").size() < 255u);
  // Nothing half-written is left: no temp folders (beside the entry: the shared headers, the index).
  std::string output;
  run("LC_ALL=C ls -A '" + config.cache_dir + "/programs'", output);
  BOOST_TEST(output == prepared.key() + "\nheaders\nindex.txt\n");
}

BOOST_AUTO_TEST_CASE(rebuild_prunes_junk_and_temp_folders_of_killed_runs)
{
  kjit::Cache cache(config);
  const auto prepared = cache.prepare(small_program("prune"), k_sm90);
  cache.get(prepared);
  cache.flush_mirror();
  const std::string programs = config.cache_dir + "/programs/";
  BOOST_TEST_REQUIRE(::mkdir((programs + "junk").c_str(), 0700) == 0);
  BOOST_TEST_REQUIRE(::mkdir((programs + ".tmp-000000000000-1-0").c_str(), 0700) == 0);
  std::string output;
  run("touch -d '2 hours ago' '" + programs + ".tmp-000000000000-1-0'", output);
  std::size_t skipped = 7;
  BOOST_TEST(cache.rebuild_mirror(&skipped) == 1u);
  BOOST_TEST(skipped == 0u);
  run("LC_ALL=C ls -A '" + programs + "' | grep -v -x -e headers -e index.txt", output);
  BOOST_TEST(output == prepared.key() + "\n");
}

// A run killed while it wrote the index or a shared header (util::write_file_atomic's temp file,
// ".<name>.tmp.<pid>.<n>") left that file for good: a rebuild kept every dot file in programs/ and
// programs/headers/, and KJIT_MAX_SIZE counted it (a 10 MiB header's temp stayed, seen in the chaos
// run of 2026-11-24). Old ones are removed now; a young one may be a writer's at work and stays.
BOOST_AUTO_TEST_CASE(rebuild_removes_temp_files_of_killed_runs)
{
  kjit::Cache cache(config);
  const auto prepared = cache.prepare(small_program("temps"), k_sm90);
  cache.get(prepared);
  cache.flush_mirror();
  const std::string programs = config.cache_dir + "/programs/";
  const std::string hex(64, 'a');
  const std::string old_index = programs + ".index.txt.tmp.999999.0";
  const std::string old_header = programs + "headers/." + hex + ".tmp.999999.1";
  const std::string young_header = programs + "headers/." + hex + ".tmp.999998.0";
  std::string output;
  run("mkdir -p '" + programs + "headers' && printf x > '" + old_index + "' && printf y > '" + old_header +
        "' && printf z > '" + young_header + "' && touch -d '2 hours ago' '" + old_index + "' '" + old_header + "'",
      output);
  std::size_t skipped = 7;
  BOOST_TEST(cache.rebuild_mirror(&skipped) == 1u);
  BOOST_TEST(skipped == 0u);
  BOOST_TEST(::access(old_index.c_str(), F_OK) != 0, "the index's temp file of a killed run was kept");
  BOOST_TEST(::access(old_header.c_str(), F_OK) != 0, "a shared header's temp file of a killed run was kept");
  BOOST_TEST(::access(young_header.c_str(), F_OK) == 0, "a young temp file (a writer at work) was removed");
}

// The temp folders and files of killed runs went only with a `kjit mirror --rebuild`: in a fleet
// whose jobs get killed (timeouts, OOM) they piled up in programs/, and KJIT_MAX_SIZE counted them,
// evicting live entries to make room for them. The writer's tidy after removals (eviction, prune,
// verify --repair) removes the old ones too now.
BOOST_AUTO_TEST_CASE(removals_tidy_away_temps_of_killed_runs)
{
  kjit::Cache cache(config);
  cache.get(small_program("tidy"), k_sm90);
  cache.flush_mirror();
  const std::string programs = config.cache_dir + "/programs/";
  const std::string old_folder = programs + ".tmp-000000000000-999999-0";
  const std::string old_index = programs + ".index.txt.tmp.999999.0";
  const std::string young_folder = programs + ".tmp-000000000000-999998-0";
  std::string output;
  run("mkdir -p '" + old_folder + "/module' '" + young_folder + "' && head -c 65536 /dev/zero > '" + old_folder +
        "/module/kernel.ptx' && printf x > '" + old_index + "' && touch -d '2 hours ago' '" + old_folder + "' '" +
        old_index + "'",
      output);
  BOOST_TEST_REQUIRE(cache.prune_to_size(0) == 1u);  // a removal, as an eviction makes
  cache.flush_mirror();
  BOOST_TEST(::access(old_folder.c_str(), F_OK) != 0, "a temp folder of a killed run was kept");
  BOOST_TEST(::access(old_index.c_str(), F_OK) != 0, "the index's temp file of a killed run was kept");
  BOOST_TEST(::access(young_folder.c_str(), F_OK) == 0, "a young temp folder (a writer at work) was removed");
}

// A child of the host (a compile worker, anything it runs) holds no descriptor of the store's
// data file: LMDB leaves it inheritable.
// A reader killed inside its read transaction leaves its slot, which pins every page freed after
// its snapshot: a long-lived writer that only ever grew the map on MDB_MAP_FULL grew it (and
// data.mdb) with every overwrite. It clears such slots (mdb_reader_check) before growing.
BOOST_AUTO_TEST_CASE(a_reader_killed_inside_its_transaction_does_not_make_the_store_grow)
{
  const std::string dir = tmp.path() + "/store";
  const std::size_t map = std::size_t(2) << 20;
  auto store = kjit::store::Store::open(dir, map);
  store->put(kjit::store::Table::meta, "value", std::string(256 * 1024, 'a'));
  const pid_t reader = ::fork();
  BOOST_TEST_REQUIRE(reader >= 0);
  if (reader == 0) {
    MDB_env* env = nullptr;
    MDB_txn* txn = nullptr;
    const bool open = mdb_env_create(&env) == MDB_SUCCESS && mdb_env_set_maxdbs(env, 16) == MDB_SUCCESS &&
                      mdb_env_set_mapsize(env, map) == MDB_SUCCESS &&
                      mdb_env_open(env, dir.c_str(), MDB_NOTLS | MDB_RDONLY, 0600) == MDB_SUCCESS &&
                      mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn) == MDB_SUCCESS;
    ::_exit(open ? 0 : 1);  // its reader slot stays taken, by a process that is gone
  }
  BOOST_TEST_REQUIRE(child_status(reader) == 0);
  for (int i = 0; i < 40; ++i) {
    store->put(kjit::store::Table::meta, "value", std::string(256 * 1024, static_cast<char>('b' + i % 20)));
  }
  BOOST_TEST(store->map_size() <= map, store->map_size() << " bytes of map after 40 overwrites of 256 KiB");
  BOOST_TEST(store->get(kjit::store::Table::meta, "value").value_or("").size() == 256u * 1024);
}

// A host under a file-size limit (ulimit -f) is never killed by SIGXFSZ for a write of kjit's: the
// store's write fails with a StoreError that names the limit, a compiled binary is still returned,
// and the mirror's files are skipped. Before, the store's first write past the limit killed the
// process (SIGXFSZ's default action).
BOOST_AUTO_TEST_CASE(a_file_size_limit_is_an_error_not_a_signal)
{
  const auto in_child = [](const std::function<int()>& body) {
    const pid_t child = ::fork();
    if (child == 0) {
      limit_file_size_in_child(std::size_t(1) << 20);
      int code = 3;
      try {
        code = body();
      } catch (...) {
        code = 4;
      }
      ::_exit(code);
    }
    return child_status(child);
  };
  const std::string dir = tmp.path() + "/store";
  BOOST_TEST(in_child([&] {
               auto store = kjit::store::Store::open(dir, std::size_t(1) << 26);
               try {
                 for (int i = 0; i < 10; ++i) {
                   store->put(kjit::store::Table::meta, "k" + std::to_string(i), std::string(300 * 1024, 'a'));
                 }
               } catch (const kjit::StoreError& e) {
                 return std::string(e.what()).find("ulimit -f") != std::string::npos ? 0 : 5;
               }
               return 6;  // all written: the limit did not apply
             }) == 0);
  BOOST_TEST(in_child([&] {
               kjit::Cache cache(config);
               kjit::Program program = small_program("file_size_limit");
               program.source += "// " + std::string(std::size_t(3) << 20, 'x') + "\n";  // mirrored as source.cu
               const bool got = cache.get(program, k_sm90) != nullptr;
               cache.flush_mirror();
               return got ? 0 : 7;
             }) == 0);
}

BOOST_AUTO_TEST_CASE(children_do_not_inherit_the_store_file)
{
  kjit::Cache cache(config);
  cache.get(small_program("inherit"), k_sm90);
  std::string fds;
  BOOST_TEST_REQUIRE(run("ls -l /proc/self/fd/", fds) == 0);
  BOOST_TEST(fds.find("data.mdb") == std::string::npos, fds);
}

BOOST_AUTO_TEST_SUITE_END()
