// Differential stress test: random small projects changed step by step; after every step the
// cached PTX equals plain NVRTC's on the files as they are now. KJIT_STRESS_STEPS and
// KJIT_STRESS_SEED make the long run (tools/stress-keys).
#include <boost/test/unit_test.hpp>

#include "fixture.hpp"

#include "rtc/compiler.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <random>
#include <sys/stat.h>
#include <thread>

using namespace kjit::test;

namespace {

const kjit::Arch k_arch = kjit::Arch::parse("compute_80");
constexpr int k_names = 6;                                      // h0.h … h5.h
const char* const k_folders[] = {"src", "incA", "incB", "incC"};  // src holds the main source

class Project {
public:
  Project(const std::string& root, unsigned seed) : m_root(root), m_random(seed)
  {
    for (const char* folder : k_folders) {
      ::mkdir((root + "/" + folder).c_str(), 0700);
    }
    for (int i = 0; i < 8; ++i) {
      write_header();
    }
    write_source();
  }

  std::string source() const { return m_root + "/src/k.cu"; }

  std::vector<std::string> options()
  {
    std::vector<std::string> out;
    for (int folder : m_order) {
      out.push_back("-I" + m_root + "/" + k_folders[folder]);
    }
    if (m_flag) {
      out.push_back("-DFLAG=1");
    }
    out.push_back("-DNAME=h" + std::to_string(m_name));
    if (m_pre) {
      out.push_back("-include=" + m_root + "/incC/pre.h");
    }
    return out;
  }

  // One random change; returns what it did (for the failure message).
  std::string change()
  {
    switch (pick(9)) {
    case 0: return write_header();
    case 1: {  // touch: new stamps, same content
      const std::string path = some_header();
      if (!path.empty()) {
        ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
      }
      return "touch " + path;
    }
    case 2: {  // move to another folder
      const std::string path = some_header();
      if (path.empty()) {
        return "move nothing";
      }
      const std::string to = m_root + "/" + k_folders[1 + pick(3)] + "/" + path.substr(path.rfind('/') + 1);
      std::rename(path.c_str(), to.c_str());
      return "move " + path + " " + to;
    }
    case 3: {  // rename to another name
      const std::string path = some_header();
      if (path.empty()) {
        return "rename nothing";
      }
      const std::string to = path.substr(0, path.rfind('/') + 1) + "h" + std::to_string(pick(k_names)) + ".h";
      std::rename(path.c_str(), to.c_str());
      return "rename " + path + " " + to;
    }
    case 4: {
      const std::string path = some_header();
      if (!path.empty()) {
        std::remove(path.c_str());
      }
      return "remove " + path;
    }
    case 5:
      std::shuffle(m_order.begin(), m_order.end(), m_random);
      return "reorder -I";
    case 6:
      m_flag = !m_flag;
      m_name = pick(k_names);
      return "defines";
    case 7:
      m_pre = !m_pre;
      write_text(m_root + "/incC/pre.h", "#define PRE_V " + std::to_string(pick(100)) + "\n");
      return "pre-include";
    default: return write_source();
    }
  }

private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(m_random); }

  std::string some_header()
  {
    for (int tries = 0; tries < 20; ++tries) {
      const std::string path =
        m_root + "/" + k_folders[pick(4)] + "/h" + std::to_string(pick(k_names)) + ".h";
      if (exists(path)) {
        return path;
      }
    }
    return {};
  }

  std::string include_line(int name)
  {
    const std::string file = "h" + std::to_string(name) + ".h";
    return pick(2) == 0 ? "#include \"" + file + "\"\n" : "#include <" + file + ">\n";
  }

  std::string write_header()
  {
    const int folder = pick(4);
    const int name = pick(k_names);
    const std::string guard = "G_" + std::string(k_folders[folder]) + "_" + std::to_string(name) + "_" +
                              std::to_string(m_version);
    std::string text = "#ifndef " + guard + "\n#define " + guard + "\n#undef H" + std::to_string(name) + "_V\n#define H" +
                       std::to_string(name) + "_V " + std::to_string(++m_version) + "\n";
    const int extra = pick(5);
    if (extra == 0) {
      text += include_line(pick(k_names));
    } else if (extra == 1) {
      text += "#if FLAG\n" + include_line(pick(k_names)) + "#endif\n";
    } else if (extra == 2) {
      text += "#include_next <h" + std::to_string(name) + ".h>\n";
    } else if (extra == 3) {
      text += "#include HDR\n";
    }
    text += "#endif\n";
    const std::string path = m_root + "/" + k_folders[folder] + "/h" + std::to_string(name) + ".h";
    write_text(path, text);
    return "write " + path;
  }

  std::string write_source()
  {
    std::string text = "#define STR(x) #x\n#define XSTR(x) STR(x)\n#define HDR XSTR(NAME.h)\n";
    const int count = 1 + pick(3);
    for (int i = 0; i < count; ++i) {
      text += pick(4) == 0 ? std::string("#include HDR\n") : include_line(pick(k_names));
    }
    text += "extern \"C\" __global__ void k(int* o) {\n  int v = 0;\n";
    for (int i = 0; i < k_names; ++i) {
      const std::string macro = "H" + std::to_string(i) + "_V";
      text += "#ifdef " + macro + "\n  v += " + macro + " * " + std::to_string(i + 1) + ";\n#endif\n";
    }
    text += "#ifdef PRE_V\n  v += PRE_V * 1000;\n#endif\n  *o = v;\n}\n";
    write_text(source(), text);
    return "write the source";
  }

  std::string m_root;
  std::mt19937 m_random;
  std::vector<int> m_order{1, 2, 3};
  bool m_flag = false;
  bool m_pre = false;
  int m_name = 0;
  int m_version = 0;
};

std::string ptx_or_error(const std::function<std::string()>& compile)
{
  try {
    return compile();
  } catch (const kjit::CompileError&) {
    return "error";
  }
}

long from_env(const char* name, long fallback)
{
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::strtol(value, nullptr, 10) : fallback;
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(key_stress, CacheFixture)

BOOST_AUTO_TEST_CASE(cached_equals_uncached_after_every_random_step)
{
  const long steps = from_env("KJIT_STRESS_STEPS", 60);
  const unsigned seed = static_cast<unsigned>(from_env("KJIT_STRESS_SEED", 22));
  Project project(tmp.path(), seed);
  std::unique_ptr<kjit::Cache> cache = std::make_unique<kjit::Cache>(config);
  std::string history;
  long compared = 0;
  long errors = 0;
  for (long step = 0; step < steps; ++step) {
    const int changes = step == 0 ? 0 : 1 + static_cast<int>(step % 3);
    for (int i = 0; i < changes; ++i) {
      history += project.change() + "; ";
    }
    if (step % 2 == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(12));  // lets some manifests be recorded
    }
    if (step % 5 == 4) {
      cache = std::make_unique<kjit::Cache>(config);  // a new process's view: disk tier and manifests only
    }
    const std::vector<std::string> options = project.options();
    const std::string want = ptx_or_error([&] {
      kjit::Program program{project.source(), read_text(project.source()), {}, options, {}};
      return kjit::rtc::compile(config, program, k_arch).ptx;
    });
    const std::string got = ptx_or_error([&] {
      kjit::Program program = kjit::program_from_file(project.source());
      program.options = options;
      return cache->get(program, k_arch)->ptx;
    });
    ++compared;
    errors += want == "error" ? 1 : 0;
    BOOST_TEST_REQUIRE(got == want, "step " << step << " (seed " << seed << ") after: " << history);
    history.clear();
  }
  BOOST_TEST_MESSAGE("stress: " << compared << " steps compared, " << errors << " of them compile errors");
  BOOST_TEST(compared == steps);
}

BOOST_AUTO_TEST_SUITE_END()
