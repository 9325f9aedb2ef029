// The `kjit script` actions on dispatch tables, beside build/list/show (command_script.cpp).
#pragma once

#include <kjit/script.hpp>

#include <string>
#include <vector>

namespace kjit::cli {

// kjit script table NAME|HASH-PREFIX: the stored table as rows set-table reads (script_table.cpp).
int script_table(const std::vector<std::string>& args);
// kjit script set-table FILE <build options> --row KEYS=SCHEDULE… | --rows TABLE (script_table.cpp).
int script_set_table(const std::vector<std::string>& args);
// kjit script tune FILE <build options> --at SIZES… --grid … --block … --arg … (script_tune.cpp).
int script_tune(const std::vector<std::string>& args);

// "1024,256=3  # given": one table row as `table` prints it and set-table reads it.
std::string row_text(const DispatchEntry& entry);

} // namespace kjit::cli
