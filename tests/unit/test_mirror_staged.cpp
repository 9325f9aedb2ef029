// The mirror's staged folders: the header links of an entry folder made while the program
// compiles (mirror::Writer::write_headers), finished after the commit when the entry has exactly
// those headers, and removed when it has others or is never stored.
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

#include "mirror/mirror.hpp"
#include "mirror/writer.hpp"
#include "util/hash.hpp"

#include <filesystem>
#include <map>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace kjit::test;

namespace {

const kjit::Arch k_arch = kjit::Arch::parse("sm_90");

// Every path below `dir` with what a reader sees of it: kind, mode, link count, content.
std::map<std::string, std::string> tree_with_links(const std::string& dir)
{
  std::map<std::string, std::string> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    struct stat st {};
    ::lstat(e.path().c_str(), &st);
    const std::string name = e.path().string().substr(dir.size());
    out[name] = std::to_string(st.st_mode) + " " + std::to_string(st.st_nlink) + " " +
                (S_ISREG(st.st_mode) ? read_text(e.path().string()) : std::string());
  }
  return out;
}

// The names in programs/ that are temps (".tmp-…").
std::size_t temps_in(const std::string& programs)
{
  std::size_t count = 0;
  for (const auto& e : std::filesystem::directory_iterator(programs)) {
    count += e.path().filename().string().rfind(".tmp-", 0) == 0 ? 1 : 0;
  }
  return count;
}

// The folder of the only entry, then the whole programs/ tree rebuilt from the store: equal.
void folder_equals_a_rebuild(const kjit::Config& config)
{
  const std::string programs = config.cache_dir + "/programs";
  const auto written = tree_with_links(programs);
  kjit::Cache cache(config);
  BOOST_TEST(cache.rebuild_mirror() == 1u);
  BOOST_TEST((tree_with_links(programs) == written));
}

// A program under `dir` whose library reaches a header through a computed include its prediction
// can't follow (the header defines SCALE as `scale`): its entry has one header more than is staged.
kjit::Program computed_include_program(const std::string& dir, int scale)
{
  const std::string inc = dir + "/inc";
  put(inc + "/lib/lib.h", "#pragma once\n#define __LIB_NS cuda_impl\n#define __LIB_ROOT lib/backend/__LIB_NS\n");
  put(inc + "/lib/ops.h", "#pragma once\n#include \"lib.h\"\n#define __LIB_OPS <__LIB_ROOT/ops.h>\n#include __LIB_OPS\n");
  put(inc + "/lib/backend/cuda_impl/ops.h", "#pragma once\n#define SCALE " + std::to_string(scale) + "\n");
  put(dir + "/app/k.cu", "#include <lib/ops.h>\nextern \"C\" __global__ void k(int* o) { *o = SCALE; }\n");
  settle();
  kjit::Program program = kjit::program_from_file(dir + "/app/k.cu");
  program.options = {"-I" + inc};
  return program;
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(mirror_staged, CacheFixture)

// A first miss: its headers' links were staged while NVRTC compiled, and the folder finished from
// them is the one a rebuild writes (names, modes, link counts, contents); no temp is left.
BOOST_AUTO_TEST_CASE(a_first_miss_finishes_its_staged_folder_as_a_rebuild_writes_it)
{
  const std::string inc = tmp.path() + "/inc";
  put(inc + "/a.h", "#include \"sub/b.h\"\n#define A (B + 1)\n");
  put(inc + "/sub/b.h", "#define B 41\n");
  put(tmp.path() + "/app/k.cu", "#include <a.h>\nextern \"C\" __global__ void k(int* o) { *o = A; }\n");
  settle();
  kjit::Program program = kjit::program_from_file(tmp.path() + "/app/k.cu");
  program.options = {"-I" + inc};
  const std::uint64_t finished = kjit::mirror::staged_folders_finished();
  {
    kjit::Cache cache(config);
    BOOST_TEST(cache.get(program, k_arch)->ptx.find("42") != std::string::npos);
  }
  BOOST_TEST(kjit::mirror::staged_folders_finished() == finished + 1);
  BOOST_TEST(temps_in(config.cache_dir + "/programs") == 0u);
  folder_equals_a_rebuild(config);
}

// The prediction missed a header (a computed include it can't follow): the entry has one more
// than the staged folder, which is not used and goes when the Cache does; the folder is whole.
BOOST_AUTO_TEST_CASE(a_staged_folder_of_other_headers_is_not_used_and_goes)
{
  const kjit::Program program = computed_include_program(tmp.path(), 7001);
  const std::uint64_t finished = kjit::mirror::staged_folders_finished();
  {
    kjit::Cache cache(config);
    BOOST_TEST(cache.get(program, k_arch)->ptx.find("7001") != std::string::npos);
  }
  BOOST_TEST(kjit::mirror::staged_folders_finished() == finished);
  BOOST_TEST(temps_in(config.cache_dir + "/programs") == 0u);
  folder_equals_a_rebuild(config);
}

// Its entry evicted at once (KJIT_MAX_SIZE), a staged folder nobody used kept the shared headers
// it links alive through the writer's sweep; they go when it does. Before, two of the three
// shared headers stayed (one link each, no blob in the store) until a later sweep or rebuild.
BOOST_AUTO_TEST_CASE(shared_headers_only_an_unused_staged_folder_linked_are_swept)
{
  const kjit::Program program = computed_include_program(tmp.path(), 7002);
  kjit::Config small = config;
  small.max_size = 1;  // every entry evicted right after its write
  {
    kjit::Cache cache(small);
    BOOST_TEST(cache.get(program, k_arch)->ptx.find("7002") != std::string::npos);
  }
  kjit::Cache cache(config);
  BOOST_TEST(cache.entries().empty());
  std::size_t shared = 0;
  for (const auto& e : std::filesystem::directory_iterator(config.cache_dir + "/programs/headers")) {
    shared += e.path().filename().string().front() != '.' ? 1 : 0;
  }
  BOOST_TEST(shared == 0u);
  BOOST_TEST(temps_in(config.cache_dir + "/programs") == 0u);
}


// Processes that stage the same new headers at once (a fleet's programs on a shared library, into
// one cache) each get their staged folder: a shared header another process puts in place between
// this one's write and its link is linked, not taken for a failure (each failure would leave the
// entry's write after the commit to make every link itself).
BOOST_AUTO_TEST_CASE(processes_staging_the_same_headers_at_once_all_stage)
{
  constexpr int k_headers = 400;
  constexpr int k_processes = 4;
  constexpr int k_rounds = 6;
  std::vector<kjit::mirror::EarlyHeader> headers;
  for (int i = 0; i < k_headers; ++i) {
    const std::string content = "#pragma once\n#define H" + std::to_string(i) + " " + std::to_string(i) + "\n";
    headers.push_back({"inc/h" + std::to_string(i) + ".h", kjit::util::to_hex(kjit::util::sha256(content)), content});
  }
  int failed = 0;
  for (int round = 0; round < k_rounds; ++round) {
    const std::string cache_dir = tmp.path() + "/round" + std::to_string(round);
    std::filesystem::create_directories(cache_dir + "/programs");
    std::vector<pid_t> children;
    for (int p = 0; p < k_processes; ++p) {
      const pid_t child = ::fork();
      if (child == 0) {
        const auto staged = kjit::mirror::stage_headers(cache_dir, headers);
        ::_exit(staged ? 0 : 1);
      }
      children.push_back(child);
    }
    for (const pid_t child : children) {
      int status = 0;
      ::waitpid(child, &status, 0);
      failed += WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
    }
  }
  BOOST_TEST(failed == 0, failed << " of " << k_processes * k_rounds << " stagings failed");
}

// A compile that let its headers' texts go (deps::Resolver::shed_texts()) hands the mirror an entry
// that names them by reference only: with no staged folder for it, the writer reads them from the
// store (WriterSource::load_headers); when it can't, it writes no folder rather than one without
// them.
BOOST_AUTO_TEST_CASE(an_entry_naming_its_headers_by_reference_is_written_with_their_contents_read_from_the_store)
{
  const std::string root = tmp.path() + "/by_reference";
  std::filesystem::create_directories(root + "/programs");
  const std::string header = "#define FROM_THE_STORE 1\n";
  kjit::store::Entry entry;
  entry.program_name = "p.cu";
  entry.binary.arch = "sm_90";
  entry.binary.ptx = ".version 8.0\n.target sm_90\n";
  entry.headers.emplace("inc/kept.h", "#define KEPT 2\n");
  entry.header_refs.push_back({"inc/kept.h", kjit::util::sha256(std::string("#define KEPT 2\n")), 15});
  entry.header_refs.push_back({"inc/let_go.h", kjit::util::sha256(header), header.size()});
  const std::string readable(64, 'c');
  const std::string unreadable(64, 'd');
  int loads = 0;
  std::vector<std::string> failed;
  kjit::mirror::WriterSource source;
  source.stored = [](const std::string&) { return true; };
  source.has_blob = [](const std::string&) { return true; };
  source.rows = [] { return std::vector<kjit::mirror::IndexRow>{}; };
  source.failed = [&](const std::string& what, std::error_code) { failed.push_back(what); };
  bool can_load = true;
  source.load_headers = [&](kjit::store::Entry& e) {
    ++loads;
    if (can_load) {
      e.headers.emplace("inc/let_go.h", header);
    }
    return can_load;
  };
  {
    kjit::mirror::Writer writer(root, source);
    writer.write(readable, entry);
    writer.flush();
    can_load = false;
    writer.write(unreadable, entry);
    writer.flush();
  }
  BOOST_TEST(loads == 2);
  // (an entry removed before its turn, its blobs with it, is no failure: tested below)
  const std::string module = root + "/programs/" + readable + "/module/headers/inc/";
  BOOST_TEST(read_text(module + "let_go.h") == header);
  BOOST_TEST(read_text(module + "kept.h") == "#define KEPT 2\n");
  BOOST_TEST(!std::filesystem::exists(root + "/programs/" + unreadable));
  BOOST_TEST(failed == std::vector<std::string>{unreadable});
}

BOOST_AUTO_TEST_CASE(an_entry_removed_before_its_headers_are_read_from_the_store_is_no_mirror_failure)
{
  // Pruned or evicted after its commit, before the mirror's turn: its blobs went with it, and the
  // writer writes nothing and says nothing (found by a review: "cannot mirror …" was warned).
  const std::string root = tmp.path() + "/removed";
  std::filesystem::create_directories(root + "/programs");
  kjit::store::Entry entry;
  entry.program_name = "p.cu";
  entry.binary.arch = "sm_90";
  entry.binary.ptx = ".version 8.0\n.target sm_90\n";
  entry.header_refs.push_back({"inc/let_go.h", kjit::util::sha256(std::string("x")), 1});
  std::vector<std::string> failed;
  kjit::mirror::WriterSource source;
  source.stored = [](const std::string&) { return false; };
  source.has_blob = [](const std::string&) { return false; };
  source.rows = [] { return std::vector<kjit::mirror::IndexRow>{}; };
  source.failed = [&](const std::string& what, std::error_code) { failed.push_back(what); };
  source.load_headers = [](kjit::store::Entry&) { return false; };
  {
    kjit::mirror::Writer writer(root, source);
    writer.write(std::string(64, 'e'), entry);
    writer.flush();
  }
  BOOST_TEST(failed.empty());
  BOOST_TEST(!std::filesystem::exists(root + "/programs/" + std::string(64, 'e')));
}

BOOST_AUTO_TEST_SUITE_END()
