// KJIT_TEST_HOOK marks a function that only kjit's unit tests call: a hook that lets a test step in
// between two steps of the library (rewrite a header while it is read, remove entries between a
// listing and the reads). Hidden, so libkjit does not export it and no application can call it; the
// unit tests link the archive of libkjit's objects (lib/meson.build, kjit_unit_dep), where it is.
#pragma once

#define KJIT_TEST_HOOK __attribute__((visibility("hidden")))
