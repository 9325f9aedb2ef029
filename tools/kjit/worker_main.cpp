// kjit-worker: compiles the programs a batch (Cache::get_many, kjit warm) sends on stdin.
#include "batch/worker.hpp"

int main()
{
  return kjit::batch::worker_main(0, 1);
}
