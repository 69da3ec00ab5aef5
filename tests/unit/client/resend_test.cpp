// The transport's resend rule, without sockets.
#include "client/resend.hpp"

#include <catch2/catch.hpp>

using exedev::detail::FailedExchange;
using exedev::detail::ResendRule;
using D = ResendRule::Decision;
using K = FailedExchange::Kind;

namespace {

FailedExchange write_failed(bool reused, std::size_t written, bool timed_out = false) {
  FailedExchange f;
  f.kind = K::write_failed;
  f.reused = reused;
  f.written = written;
  f.timed_out = timed_out;
  return f;
}

FailedExchange closed_silently(bool reused, bool idempotent) {
  FailedExchange f;
  f.kind = K::closed_silently;
  f.reused = reused;
  f.idempotent = idempotent;
  return f;
}

}  // namespace

TEST_CASE("resend: a request that never left is sent again only after a reused connection failed") {
  for (const bool idempotent : {false, true}) {
    auto reused = write_failed(true, 0);
    reused.idempotent = idempotent;
    CHECK(ResendRule().on_failure(reused) == D::resend);
    auto fresh = write_failed(false, 0);
    fresh.idempotent = idempotent;
    CHECK(ResendRule().on_failure(fresh) == D::not_sent);  // a fresh connection's failure is real
  }
}

TEST_CASE("resend: a request of which anything was written, or whose write timed out, may have arrived") {
  CHECK(ResendRule().on_failure(write_failed(true, 1)) == D::sent);
  CHECK(ResendRule().on_failure(write_failed(false, 100)) == D::sent);
  CHECK(ResendRule().on_failure(write_failed(true, 0, true)) == D::sent);
  CHECK(ResendRule().on_failure(write_failed(false, 0, true)) == D::sent);
}

TEST_CASE("resend: a silent close of a reused connection resends only an idempotent request") {
  CHECK(ResendRule().on_failure(closed_silently(true, true)) == D::resend);
  CHECK(ResendRule().on_failure(closed_silently(true, false)) == D::sent);
  CHECK(ResendRule().on_failure(closed_silently(false, true)) == D::sent);
  CHECK(ResendRule().on_failure(closed_silently(false, false)) == D::sent);
}

TEST_CASE("resend: at most max_resends, and the final error remembers every attempt") {
  ResendRule unsent;
  for (int i = 0; i < ResendRule::max_resends; ++i) REQUIRE(unsent.on_failure(write_failed(true, 0)) == D::resend);
  CHECK(unsent.on_failure(write_failed(true, 0)) == D::not_sent);  // none of them left

  // An idempotent request whose first attempt met a silent close may have run: when the last
  // attempt fails without writing anything, the error must still say it may have arrived.
  ResendRule mixed;
  REQUIRE(mixed.on_failure(closed_silently(true, true)) == D::resend);
  for (int i = 1; i < ResendRule::max_resends; ++i) REQUIRE(mixed.on_failure(write_failed(true, 0)) == D::resend);
  CHECK(mixed.on_failure(write_failed(true, 0)) == D::sent);
  ResendRule fresh_after_close;
  REQUIRE(fresh_after_close.on_failure(closed_silently(true, true)) == D::resend);
  CHECK(fresh_after_close.on_failure(write_failed(false, 0)) == D::sent);
}
