// The one classification of Client::run / run_script failures that SandboxBackend acts on.
#include "sandbox/run_errors.hpp"

#include <exedev/errors.hpp>

#include <boost/asio/error.hpp>
#include <boost/system/system_error.hpp>

#include <catch2/catch.hpp>

#include <stdexcept>

using exedev::detail::classify_run_error;
using K = exedev::detail::RunErrorClass::Kind;

namespace {

template <typename E>
exedev::detail::RunErrorClass classify(E error) {
  return classify_run_error(std::make_exception_ptr(std::move(error)));
}

}  // namespace

TEST_CASE("run errors: stopped commands keep their output and limit") {
  const auto timeout = classify(exedev::RunTimeoutError("t", exedev::PartialOutput{"out", "err"}));
  CHECK(timeout.kind == K::timeout);
  CHECK(timeout.output.stdout_data == "out");
  CHECK(timeout.output.stderr_data == "err");
  const auto limit = classify(exedev::OutputLimitError("l", 1024, exedev::PartialOutput{"o", "e"}));
  CHECK(limit.kind == K::output_limit);
  CHECK(limit.limit == 1024);
  CHECK(limit.output.stdout_data == "o");
  CHECK(limit.output.stderr_data == "e");
}

TEST_CASE("run errors: what may have run, and what surely did not") {
  const auto unknown = classify(exedev::OutcomeUnknownError("u", exedev::PartialOutput{"partial", "\xff"}));
  CHECK(unknown.kind == K::may_have_run);
  CHECK(unknown.output.stdout_data == "partial");
  CHECK(unknown.output.stderr_data == "\xff");  // raw: the backend repairs UTF-8 when it reports
  CHECK(classify(exedev::ConnectionError("c", true)).kind == K::may_have_run);
  CHECK(classify(exedev::ProtocolError("p")).kind == K::may_have_run);
  CHECK(classify(exedev::ServerError(500, "ssh", "boom")).kind == K::may_have_run);
  CHECK(classify(exedev::GatewayTimeoutError(504, "ssh", "slow")).kind == K::may_have_run);
  // Never sent, or refused before anything ran: the caller may simply try again.
  CHECK(classify(exedev::ConnectionError("c", false)).kind == K::not_run);
  CHECK(classify(exedev::RateLimitedError("ssh", "slow down")).kind == K::not_run);
  CHECK(classify(exedev::APIError(401, "ssh", "who")).kind == K::not_run);
  // exe.dev's 422: the VM may be gone or paused, which the backend checks.
  CHECK(classify(exedev::CommandFailedError(422, "ssh", "vm not found")).kind == K::refused);
}

TEST_CASE("run errors: what is not the client's is passed on as it is") {
  CHECK(classify(boost::system::system_error(boost::asio::error::operation_aborted)).kind == K::not_run);
  CHECK(classify(std::runtime_error("an output callback threw")).kind == K::not_run);
  CHECK(classify(std::invalid_argument("bad env name")).kind == K::not_run);
  CHECK(classify(42).kind == K::not_run);
}
