// Makes descriptors 0, 1 and 2 valid before anything else opens a file.
#pragma once

namespace kjit::cli {

// A process started with stdin, stdout or stderr closed (`kjit list >&-`) would hand that number
// to the next file it opens (the cache folder, LMDB's lock.mdb), and its output and messages
// would go into that file. Each closed one is opened here: stdin and stderr on /dev/null, stdout
// on /dev/full, so that output written to a closed stdout still fails (exit 1) as it did before,
// and a command that writes nothing still succeeds. Call first thing in main().
void open_standard_fds() noexcept;

} // namespace kjit::cli
