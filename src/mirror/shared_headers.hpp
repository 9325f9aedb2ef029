// The mirror's shared headers: programs/headers/<sha256>, each content written once and
// hard-linked into every entry folder that uses it (docs/cache-format.md, "Folder layout").
#pragma once

#include <string>
#include <system_error>

namespace kjit::mirror {

// programs/headers/<hex> (in the folder `shared`), written unless a file with this content is
// there, then hard-linked as `name` into `folder`.
std::error_code link_shared_header(int shared, const std::string& hex, const std::string& content, int folder,
                                   const std::string& name);

} // namespace kjit::mirror
