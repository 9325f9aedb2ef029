// What a warm start needs from the store: a process with the toolchain already in memory still
// leaves it in every store it writes, so the next process there hits without loading NVRTC; the
// store's map is found without the /proc stream parser it used to cost.
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"
#include "store/check.hpp"
#include "util/file.hpp"

#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <lmdb.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace kjit::test;

BOOST_FIXTURE_TEST_SUITE(warm_start, CacheFixture)

BOOST_AUTO_TEST_CASE(a_second_cache_folder_of_a_process_lets_the_next_process_hit_without_nvrtc)
{
  const std::string base = config.cache_dir;
  config.cache_dir = base + "/first";
  kjit::Cache first(config);
  first.get(small_program("first"), kjit::Arch::parse("sm_90"));  // learns the toolchain's versions

  // The same process, another folder: the versions come from this process's memory.
  const std::string file = tmp.path() + "/second.cu";
  write_text(file, small_program("second").source);
  config.cache_dir = base + "/second";
  kjit::Cache second(config);
  second.get(kjit::program_from_file(file), kjit::Arch::parse("sm_90"));
  BOOST_TEST(second.stats().compiles == 1u);

  const std::string warm = probe_cache(config.cache_dir, file, "sm_90");
  BOOST_TEST(output_has_line(warm, "disk_hits: 1"), warm);
  BOOST_TEST(output_has_line(warm, "compiles: 0"), warm);
  BOOST_TEST(output_has_line(warm, "nvrtc_loaded: 0"), warm);
  BOOST_TEST(output_has_line(warm, "nvjitlink_loaded: 0"), warm);
}

// map_address() finds the environment's own map of data.mdb, also when the file is mapped a second
// time (a forked child holds its parent's map): a parse that found nothing would turn off the
// "value inside the file" check of every lookup without any other test noticing.
BOOST_AUTO_TEST_CASE(the_store_map_is_found_among_the_process_mappings)
{
  const std::string dir = tmp.path() + "/env";
  BOOST_REQUIRE(!kjit::util::create_directories(dir, 0700));
  MDB_env* env = nullptr;
  BOOST_REQUIRE(mdb_env_create(&env) == MDB_SUCCESS);
  mdb_env_set_mapsize(env, std::size_t(1) << 24);
  BOOST_REQUIRE(mdb_env_open(env, dir.c_str(), MDB_NOTLS, 0600) == MDB_SUCCESS);
  MDB_txn* txn = nullptr;
  MDB_dbi dbi = 0;
  BOOST_REQUIRE(mdb_txn_begin(env, nullptr, 0, &txn) == MDB_SUCCESS);
  BOOST_REQUIRE(mdb_dbi_open(txn, nullptr, 0, &dbi) == MDB_SUCCESS);
  MDB_val key{3, const_cast<char*>("key")};
  MDB_val value{5, const_cast<char*>("value")};
  BOOST_REQUIRE(mdb_put(txn, dbi, &key, &value, 0) == MDB_SUCCESS);
  BOOST_REQUIRE(mdb_txn_commit(txn) == MDB_SUCCESS);

  struct stat st {};
  BOOST_REQUIRE(::stat((dir + "/data.mdb").c_str(), &st) == 0);
  const auto holds_key = [&](const char* base) {
    MDB_txn* read = nullptr;
    MDB_val found{};
    const bool got = mdb_txn_begin(env, nullptr, MDB_RDONLY, &read) == MDB_SUCCESS &&
                     mdb_get(read, dbi, &key, &found) == MDB_SUCCESS;
    const auto* p = static_cast<const char*>(found.mv_data);
    const bool inside = got && base != nullptr && p >= base && p < base + (std::size_t(1) << 24);
    mdb_txn_abort(read);
    return inside;
  };
  const char* alone = kjit::store::map_address(env, st.st_dev, st.st_ino);
  BOOST_TEST(holds_key(alone));
  std::uint32_t magic = 0;
  if (alone != nullptr) {
    std::memcpy(&magic, alone + 16, sizeof magic);  // meta page 0 starts the map
  }
  BOOST_TEST(magic == 0xBEEFC0DEu);

  const int fd = ::open((dir + "/data.mdb").c_str(), O_RDONLY | O_CLOEXEC);
  BOOST_REQUIRE(fd >= 0);
  void* second = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  BOOST_REQUIRE(second != MAP_FAILED);
  const char* among_two = kjit::store::map_address(env, st.st_dev, st.st_ino);
  // (as addresses: Boost.Test compares two const char* as C strings)
  BOOST_TEST(reinterpret_cast<std::uintptr_t>(among_two) == reinterpret_cast<std::uintptr_t>(alone));
  BOOST_TEST(reinterpret_cast<std::uintptr_t>(among_two) != reinterpret_cast<std::uintptr_t>(second));
  // Found from a page of the env's own map too, without /proc/self/maps (what a store open uses).
  const char* from_a_page = kjit::store::map_address_from_a_page(env);
  BOOST_TEST(reinterpret_cast<std::uintptr_t>(from_a_page) == reinterpret_cast<std::uintptr_t>(alone));
  ::munmap(second, static_cast<std::size_t>(st.st_size));
  mdb_env_close(env);
}

// A store with no key yet has no page to find the map from: map_address() is asked instead.
BOOST_AUTO_TEST_CASE(an_empty_store_has_no_page_to_find_its_map_from)
{
  const std::string dir = tmp.path() + "/empty";
  BOOST_REQUIRE(!kjit::util::create_directories(dir, 0700));
  MDB_env* env = nullptr;
  BOOST_REQUIRE(mdb_env_create(&env) == MDB_SUCCESS);
  mdb_env_set_mapsize(env, std::size_t(1) << 24);
  BOOST_REQUIRE(mdb_env_open(env, dir.c_str(), MDB_NOTLS, 0600) == MDB_SUCCESS);
  BOOST_TEST(kjit::store::map_address_from_a_page(env) == static_cast<const char*>(nullptr));
  mdb_env_close(env);
}

// A process that only hits opens the store's tables in a read transaction: it does not wait for
// LMDB's writer lock, which another process holds for as long as it commits (with an fsync).
BOOST_AUTO_TEST_CASE(a_warm_process_does_not_wait_for_another_process_writing)
{
  const std::string file = tmp.path() + "/writer.cu";
  write_text(file, small_program("writer").source);
  const std::string cold = probe_cache(config.cache_dir, file, "sm_90");
  BOOST_TEST_REQUIRE(output_has_line(cold, "compiles: 1"), cold);
  BOOST_TEST_REQUIRE(output_has_line(probe_cache(config.cache_dir, file, "sm_90"), "disk_hits: 1"));  // all recorded

  // This process writes (another process, for the probe's LMDB): it holds the writer lock.
  MDB_env* env = nullptr;
  BOOST_REQUIRE(mdb_env_create(&env) == MDB_SUCCESS);
  mdb_env_set_maxdbs(env, 16);
  mdb_env_set_mapsize(env, config.store_map_size);
  BOOST_REQUIRE(mdb_env_open(env, (config.cache_dir + "/store").c_str(), MDB_NOTLS, 0600) == MDB_SUCCESS);
  MDB_txn* writing = nullptr;
  BOOST_REQUIRE(mdb_txn_begin(env, nullptr, 0, &writing) == MDB_SUCCESS);
  const std::string warm = probe_cache(config.cache_dir, file, "sm_90", "timeout 10");
  mdb_txn_abort(writing);
  mdb_env_close(env);
  BOOST_TEST(output_has_line(warm, "disk_hits: 1"), warm);
  BOOST_TEST(output_has_line(warm, "compiles: 0"), warm);
}

BOOST_AUTO_TEST_SUITE_END()
