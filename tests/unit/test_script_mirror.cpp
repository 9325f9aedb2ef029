// The scripts/ mirror: relative links into programs/ in schedule order, schedule.txt,
// dispatch_table.txt, failed/building/, latency reports, hostile names, and `mirror --rebuild`.
#include <boost/test/unit_test.hpp>

#include "script_samples.hpp"

#include "util/file.hpp"
#include "util/hash.hpp"

#include <kjit/script.hpp>

#include <dirent.h>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

using kjit::test::CacheFixture;
using kjit::test::exists;
using kjit::test::macro_script;
using kjit::test::read_text;
using kjit::test::template_script;
using kjit::test::test_batch;

namespace {

std::string link_target(const std::string& path)
{
  char buffer[4096];
  const ssize_t n = ::readlink(path.c_str(), buffer, sizeof buffer);
  return n < 0 ? std::string() : std::string(buffer, static_cast<std::size_t>(n));
}

std::set<std::string> listing(const std::string& dir)
{
  std::set<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") {
        names.insert(e->d_name);
      }
    }
    ::closedir(d);
  }
  return names;
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(script_mirror, CacheFixture)

BOOST_AUTO_TEST_CASE(schedule_links_resolve_to_their_programs_in_order)
{
  kjit::Cache cache(config);
  kjit::BuiltScript built = template_script().build(cache, test_batch());
  cache.flush_mirror();  // programs/<key> is written by the mirror's thread
  const std::string dir = config.cache_dir + "/scripts/matmul_f16/" + built.hash();
  BOOST_TEST_REQUIRE(exists(dir));
  BOOST_TEST(listing(config.cache_dir + "/scripts") == std::set<std::string>{"matmul_f16"});
  BOOST_TEST(listing(dir + "/programs") == (std::set<std::string>{"0", "1", "2", "3"}));
  for (const auto& s : built.schedules()) {
    const std::string link = dir + "/programs/" + std::to_string(s.index);
    struct stat st {};
    BOOST_TEST_REQUIRE(::lstat(link.c_str(), &st) == 0);
    BOOST_TEST(S_ISLNK(st.st_mode));
    BOOST_TEST(link_target(link) == "../../../../programs/" + s.program_key);
    // The link resolves to the program: its texts hash to its name and ask for this schedule.
    const std::string program_txt = read_text(link + "/program.txt");
    const std::string options_txt = read_text(link + "/options.txt");
    BOOST_TEST_REQUIRE(!program_txt.empty());
    BOOST_TEST(kjit::util::to_hex(kjit::util::sha256(program_txt + options_txt)) == s.program_key);
    BOOST_TEST(program_txt.find(s.kernel) != std::string::npos, s.kernel);
  }
  const std::string schedule = read_text(dir + "/schedule.txt");
  BOOST_TEST(schedule.find("index\tBLOCK\tUNROLL\tstatus\tprogram\n") == 0u, schedule);
  BOOST_TEST(schedule.find("\n2\t128\t1\tbuilt\t" + built.schedules()[2].program_key + "\n") != std::string::npos,
             schedule);
  // The hashed text is there, and hashes to the folder's name.
  BOOST_TEST(kjit::util::to_hex(kjit::util::sha256(read_text(dir + "/script.txt"))) == built.hash());
  BOOST_TEST(!exists(dir + "/dispatch_table.txt"));  // nothing chosen yet

  kjit::TuningOptions tuning;
  tuning.cost = [](const kjit::ScheduleInfo& s, const std::vector<std::uint64_t>&) {
    return static_cast<double>(10 - s.index);  // the last schedule is cheapest
  };
  built.set_tuning(tuning);
  BOOST_TEST(built.choose({1000}) == 3u);
  BOOST_TEST(built.choose({100}) == 3u);
  BOOST_TEST(read_text(dir + "/dispatch_table.txt") == "n\tchoice\n112\t3\n1024\t3\n");
  BOOST_TEST(read_text(dir + "/fingerprint.txt").find("arch=sm_80") != std::string::npos);
  const std::string report = read_text(dir + "/latency/n=1024/report.txt");
  BOOST_TEST(report.find("# chosen: 3 (cost)\nschedule\tcost\n3\t7\t# BLOCK=128 UNROLL=2\n2\t8") == 0u, report);
  BOOST_TEST(link_target(dir + "/latency/n=1024/best") == "../../programs/3");
  BOOST_TEST(read_text(dir + "/latency/n=1024/best/program.txt").find("kern<128,2>") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_schedule_that_fails_lands_in_failed_building)
{
  kjit::Cache cache(config);
  kjit::BuiltScript built = macro_script("64").build(cache, test_batch());
  BOOST_TEST(built.schedules()[0].built);
  BOOST_TEST(!built.schedules()[1].built);
  BOOST_TEST(built.schedules()[2].built);
  BOOST_TEST(built.schedules()[1].log.find("BLOCK 64 is not supported") != std::string::npos);
  const std::string dir = config.cache_dir + "/scripts/macro_script/" + built.hash();
  BOOST_TEST(listing(dir + "/programs") == (std::set<std::string>{"0", "2"}));
  BOOST_TEST(listing(dir + "/failed/building") == std::set<std::string>{"1.txt"});
  const std::string failed = read_text(dir + "/failed/building/1.txt");
  BOOST_TEST(failed.find("# schedule 1: BLOCK=64\n") == 0u, failed);
  BOOST_TEST(failed.find("BLOCK 64 is not supported") != std::string::npos, failed);
  BOOST_TEST(read_text(dir + "/schedule.txt").find("\n1\t64\tfailed\t-\n") != std::string::npos);
  // A failed schedule is never chosen, even where it would cost least.
  kjit::TuningOptions tuning;
  tuning.cost = [](const kjit::ScheduleInfo& s, const std::vector<std::uint64_t>&) { return s.index == 1 ? 0.0 : 1.0; };
  built.set_tuning(tuning);
  BOOST_TEST(built.choose({64}) == 0u);
  BOOST_CHECK_THROW(built.binary(1), kjit::ScriptError);
  BOOST_CHECK_THROW(built.set_table({{{64}, 1, "", {}}}, kjit::current_fingerprint(built.arch())), kjit::ScriptError);
}

BOOST_AUTO_TEST_CASE(hostile_names_stay_inside_scripts)
{
  kjit::Cache cache(config);
  const std::string names[] = {"../../escaped", "/tmp/abs", "..", "", "line\nbreak\x01", "a/../../b"};
  for (const auto& name : names) {
    kjit::Script script = macro_script("", name);
    script.space[0].values = {"32"};
    const kjit::BuiltScript built = script.build(cache, test_batch());
    cache.flush_mirror();
    BOOST_TEST(exists(config.cache_dir + "/scripts/" + built.folder() + "/" + built.hash() + "/programs/0/program.txt"));
  }
  BOOST_TEST(listing(config.cache_dir + "/scripts") ==
             (std::set<std::string>{"escaped", "tmp_abs", "script", "line_break", "a_b"}));
  // Nothing was written beside the cache folder or its parent.
  BOOST_TEST(listing(tmp.path()) == std::set<std::string>{"cache"});
  BOOST_TEST(listing(config.cache_dir).count("escaped") == 0u);
}

BOOST_AUTO_TEST_CASE(rebuild_writes_scripts_again_from_the_store)
{
  kjit::Cache cache(config);
  kjit::BuiltScript built = template_script().build(cache, test_batch());
  built.set_table({{{1024}, 1, "", {}}, {{2048}, 2, "", {}}}, kjit::Fingerprint{"*", "*", "*", "*", "*"});
  const std::string dir = config.cache_dir + "/scripts/matmul_f16/" + built.hash();
  const std::string table = read_text(dir + "/dispatch_table.txt");
  BOOST_TEST(table == "n\tchoice\n1024\t1\n2048\t2\n");
  kjit::test::write_text(config.cache_dir + "/scripts/junk", "x");
  std::system(("rm -rf '" + dir + "'").c_str());
  BOOST_TEST(!exists(dir));
  std::size_t skipped = 0;
  cache.rebuild_mirror(&skipped);
  BOOST_TEST(skipped == 0u);
  BOOST_TEST(read_text(dir + "/dispatch_table.txt") == table);
  BOOST_TEST(link_target(dir + "/programs/3") == "../../../../programs/" + built.schedules()[3].program_key);
  BOOST_TEST(!exists(config.cache_dir + "/scripts/junk"));  // the tree is the store's view only
  BOOST_TEST(read_text(dir + "/fingerprint.txt").find("gpu=*") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(clear_forgets_scripts_and_their_folders)
{
  kjit::Cache cache(config);
  kjit::BuiltScript built = macro_script().build(cache, test_batch());
  built.set_table({{{64}, 0, "", {}}}, kjit::current_fingerprint(built.arch()));
  BOOST_TEST(kjit::stored_scripts(cache).size() == 1u);
  BOOST_TEST(exists(config.cache_dir + "/scripts/macro_script"));
  cache.clear();
  BOOST_TEST(kjit::stored_scripts(cache).empty());
  BOOST_TEST(!exists(config.cache_dir + "/scripts"));
  BOOST_TEST(built.table().empty());
  // Built again, it is recorded again.
  macro_script().build(cache, test_batch());
  BOOST_TEST(kjit::stored_scripts(cache).size() == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
