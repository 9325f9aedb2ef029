// kjit-worker: compiles the programs a batch (Cache::get_many, kjit warm) sends on stdin.
#include "batch/worker.hpp"
#include "malloc_arenas.hpp"
#include "standard_fds.hpp"

#include <csignal>
#include <sys/prctl.h>

int main()
{
  // A host with stderr closed starts its workers so: the PCH files and include copies NVRTC writes
  // to the worker's TMPDIR would take descriptor 2, and any message written there.
  kjit::cli::open_standard_fds();
  kjit::cli::share_one_malloc_arena();  // as the CLI (malloc_arenas.hpp); its compiles start no thread today
  // Dies with the process that started it: a worker never outlives its batch (NVRTC can hang).
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  return kjit::batch::worker_main(0, 1);
}
