// A bundle file used read-only as a cache tier below the local store (KJIT_BUNDLE).
#pragma once

#include "bundle/format.hpp"
#include "tier/tier.hpp"

#include <memory>
#include <string>
#include <vector>

namespace kjit::bundle {

// The tier for the bundle at `path`. The file is opened (header, index and meta checked) on the
// first call to get() or meta(); if that fails every get() answers the same failure. Never throws.
std::unique_ptr<tier::Tier> open_tier(const std::string& path);

// The meta rows of a bundle tier (toolchain identities), empty if it can't be read. Never throws.
std::vector<MetaRow> tier_meta(tier::Tier& tier);

} // namespace kjit::bundle
