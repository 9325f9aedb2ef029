// Boost.Test entry point for the driver contract suite, run against the fake libcuda.so.1.
#define BOOST_TEST_MODULE kjit driver contract tests
#include <boost/test/unit_test.hpp>
