// The mirror's cost on a miss: writing a saxpy entry's folder in the caller (as before format 4)
// against queueing it for the background writer (now), and what the writer then spends per entry.
#include "sections.hpp"
#include "workload.hpp"

#include "mirror/mirror.hpp"
#include "mirror/writer.hpp"

#include <cstdio>
#include <string>
#include <sys/stat.h>

namespace bench {

void mirror_writes(Report& report, const Options& options)
{
  std::printf("\n[mirror] a saxpy entry's mirror folder: in the caller vs the background writer\n");
  const int entries = options.quick ? 20 : 300;
  const kjit::Program program = kernel_program(4711);
  kjit::store::Entry entry;
  entry.program_name = program.name;
  entry.source = program.source;
  entry.program_txt = "kjit-program 1\nname: " + program.name + "\nsource:\n" + program.source + "\n";
  entry.options_txt = "kjit-options 1\narch: sm_90\n";
  entry.binary = kjit::compile(program, kjit::Arch::parse("sm_90"));
  entry.options = {"-arch=sm_90"};
  const auto key = [](int i) {
    char hex[65];
    std::snprintf(hex, sizeof hex, "%064x", i);
    return std::string(hex);
  };

  Folder inline_folder("mirror-sync");
  std::vector<double> in_caller;
  for (int i = 0; i < entries; ++i) {
    const auto t = Clock::now();
    std::ignore = kjit::mirror::write_entry(inline_folder.path(), key(i), entry);
    in_caller.push_back(us_since(t));
  }
  Folder queued_folder("mirror-queued");
  std::vector<double> queued;
  double drained_us = 0;
  {
    kjit::mirror::WriterSource source;
    source.stored = [](const std::string&) { return true; };
    source.has_blob = [](const std::string&) { return true; };
    source.rows = [] { return std::vector<kjit::mirror::IndexRow>{}; };
    kjit::mirror::Writer writer(queued_folder.path(), source);
    const auto all = Clock::now();
    for (int i = 0; i < entries; ++i) {
      const auto t = Clock::now();
      writer.write(key(i), entry);  // the entry is copied, as a miss copies it
      queued.push_back(us_since(t));
    }
    writer.flush();
    drained_us = us_since(all);
  }
  report.note("mirror", "write the folder in the caller, p50 per miss", percentile(in_caller, 50), "us");
  report.note("mirror", "queue it for the writer (copy included), p50 per miss", percentile(queued, 50), "us");
  report.note("mirror", "writer thread, wall time per entry", drained_us / entries, "us");
  report.note("mirror", "allocated bytes per entry (programs/, index.txt included)",
              std::stod(run("du -sB1 '" + queued_folder.path() + "/programs' | cut -f1")) / entries, "B");
}

} // namespace bench
