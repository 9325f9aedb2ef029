// Sample scripts shared by the script tests: a template kernel (pattern mode) and a macro kernel.
#pragma once

#include "fixture.hpp"

#include <kjit/script.hpp>

#include <cstdlib>

namespace kjit::test {

// kern<BLOCK, UNROLL>: four schedules (BLOCK 64/128 × UNROLL 1/2) through a name-expression pattern.
inline Script template_script(const std::string& name = "MatmulF16")
{
  Script script;
  script.name = name;
  script.source = "template <int BLOCK, int UNROLL> __global__ void kern(int* p) { p[threadIdx.x] = BLOCK * UNROLL; }\n";
  script.space = {{"BLOCK", {"64", "128"}}, {"UNROLL", {"1", "2"}}};
  script.name_expression = "kern<{BLOCK},{UNROLL}>";
  script.arch = Arch::parse("sm_80");
  return script;
}

// extern "C" macro_kern with BLOCK as a macro; `bad_block` (if given) fails to compile.
inline Script macro_script(const std::string& bad_block = "", const std::string& name = "macro_script")
{
  Script script;
  script.name = name;
  script.source = "extern \"C\" __global__ void macro_kern(int* p) { p[threadIdx.x] = BLOCK; }\n";
  if (!bad_block.empty()) {
    script.source += "static_assert(BLOCK != " + bad_block + ", \"BLOCK " + bad_block + " is not supported\");\n";
  }
  script.space = {{"BLOCK", {"32", "64", "128"}}};
  script.arch = Arch::parse("sm_80");
  return script;
}

// Batches go to the built kjit-worker.
inline BatchOptions test_batch()
{
  BatchOptions batch;
  batch.worker_path = helper("KJIT_TEST_WORKER");
  batch.jobs = 2;
  return batch;
}

} // namespace kjit::test
