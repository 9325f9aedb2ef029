// The demo's script part: one script built for every schedule and its dispatch table shown.
#pragma once

#include <kjit/kjit.hpp>

#include <string>

namespace demo {

// Builds the TileScale script (docs/scripts.md) in `cache`, fills its dispatch table for a few
// sizes with a cost model (no GPU needed) and prints schedules, table and mirror folder. `worker`:
// the kjit-worker for the batch (in-process without one). Returns 0, or 1 after printing what failed.
int show_script(kjit::Cache& cache, const std::string& worker);

} // namespace demo
