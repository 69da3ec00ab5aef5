#include "common/backoff.hpp"

#include <catch2/catch.hpp>

#include <limits>

using namespace exedev::detail;
using std::chrono::milliseconds;

TEST_CASE("doubled_delay doubles per attempt up to the cap", "[unit][common]") {
  CHECK(doubled_delay(milliseconds(100), 0, milliseconds(1000)) == milliseconds(100));
  CHECK(doubled_delay(milliseconds(100), 1, milliseconds(1000)) == milliseconds(200));
  CHECK(doubled_delay(milliseconds(100), 3, milliseconds(1000)) == milliseconds(800));
  CHECK(doubled_delay(milliseconds(100), 4, milliseconds(1000)) == milliseconds(1000));
  CHECK(doubled_delay(milliseconds(100), 1000000, milliseconds(1000)) == milliseconds(1000));
  CHECK(doubled_delay(milliseconds(3), 1, milliseconds(5)) == milliseconds(5));
}

TEST_CASE("doubled_delay clamps negative and oversized values without overflowing", "[unit][common]") {
  CHECK(doubled_delay(milliseconds(-5), 3, milliseconds(1000)) == milliseconds(0));
  CHECK(doubled_delay(milliseconds(100), 3, milliseconds(-1)) == milliseconds(0));
  CHECK(doubled_delay(milliseconds(5000), 0, milliseconds(1000)) == milliseconds(1000));
  const auto huge = milliseconds::max();
  CHECK(doubled_delay(huge / 3, 5, huge) == huge);
  CHECK(doubled_delay(milliseconds(1), 200, huge) == huge);
}

TEST_CASE("Backoff doubles after idle rounds and starts again after progress", "[unit][common]") {
  Backoff backoff(milliseconds(10), milliseconds(50));
  CHECK(backoff.current() == milliseconds(10));
  backoff.advance();
  CHECK(backoff.current() == milliseconds(20));
  backoff.advance();
  backoff.advance();
  CHECK(backoff.current() == milliseconds(50));
  backoff.advance();
  CHECK(backoff.current() == milliseconds(50));
  backoff.advance(true);
  CHECK(backoff.current() == milliseconds(10));
}
