// kjit-worker: compiles the programs a batch (Cache::get_many, kjit warm) sends on stdin.
#include "batch/worker.hpp"

#include <csignal>
#include <sys/prctl.h>

int main()
{
  // Dies with the process that started it: a worker never outlives its batch (NVRTC can hang).
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  return kjit::batch::worker_main(0, 1);
}
