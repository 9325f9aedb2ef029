// The demo's GPU half: launch every example kernel and check it against a CPU reference.
#pragma once

#include <kjit/kjit.hpp>

#include <string>
#include <vector>

namespace demo {

// Launches saxpy, scale<float>, scale<double> and half_axpy from `programs` through
// kjit::get_kernel and compares with the CPU. Prints one line per kernel; returns the failures.
int launch_and_check(const std::vector<kjit::Program>& programs);

} // namespace demo
