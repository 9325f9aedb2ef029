// Boost.Test entry point for kjit's unit tests (no GPU needed).
#define BOOST_TEST_MODULE kjit unit tests
#include <boost/test/unit_test.hpp>
