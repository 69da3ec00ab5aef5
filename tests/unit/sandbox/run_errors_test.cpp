// The one classification of failures that SandboxBackend's recovery acts on: by code and cause,
// and by where on the route the failure happened.
#include "sandbox/run_errors.hpp"

#include <exedev/errors.hpp>
#include <exedev/sandbox/errors.hpp>
#include <exedev/ssh/errors.hpp>

#include <boost/asio/error.hpp>
#include <boost/system/system_error.hpp>

#include <libssh2.h>

#include "ssh/ssh_errors.hpp"

#include <catch2/catch.hpp>

#include <stdexcept>

using exedev::detail::classify_failure;
using exedev::detail::RouteStep;
using F = exedev::detail::RouteFailure;

namespace {

template <typename E>
exedev::detail::FailureClass classify(E error, RouteStep step = RouteStep::operating) {
  return classify_failure(std::make_exception_ptr(std::move(error)), step);
}

exedev::ConnectionError connection_error(bool sent, std::error_code cause) { return {"c", sent, cause}; }

}  // namespace

TEST_CASE("failures: stopped commands keep their output and limit") {
  const auto timeout = classify(exedev::RunTimeoutError("t", exedev::PartialOutput{"out", "err"}));
  CHECK(timeout.kind == F::timed_out);
  CHECK(timeout.output.stdout_data == "out");
  CHECK(timeout.output.stderr_data == "err");
  const auto limit = classify(exedev::OutputLimitError("l", 1024, exedev::PartialOutput{"o", "e"}));
  CHECK(limit.kind == F::output_limit);
  CHECK(limit.limit == 1024);
  CHECK(limit.output.stdout_data == "o");
  CHECK(limit.output.stderr_data == "e");
}

TEST_CASE("failures: what may have run, and what surely did not") {
  const auto unknown = classify(exedev::OutcomeUnknownError("u", exedev::PartialOutput{"partial", "\xff"}));
  CHECK(unknown.kind == F::outcome_unknown);
  CHECK(unknown.may_have_run);
  CHECK(unknown.output.stdout_data == "partial");
  CHECK(unknown.output.stderr_data == "\xff");  // raw: the backend repairs UTF-8 when it reports
  CHECK(unknown.message == "u");
  CHECK(classify(exedev::ProtocolError("p")).kind == F::outcome_unknown);
  CHECK(classify(exedev::ServerError(500, "ssh", "boom")).kind == F::outcome_unknown);
  CHECK(classify(exedev::GatewayTimeoutError(504, "ssh", "slow")).kind == F::outcome_unknown);
  // A connection that failed under the operation: dropped, and whether it may have run.
  const auto sent = classify(exedev::ConnectionError("c", true));
  CHECK(sent.kind == F::dropped);
  CHECK(sent.may_have_run);
  const auto unsent = classify(exedev::ConnectionError("c", false));
  CHECK(unsent.kind == F::dropped);
  CHECK_FALSE(unsent.may_have_run);
  // Refused before anything ran: passed on for the caller.
  CHECK(classify(exedev::RateLimitedError("ssh", "slow down")).kind == F::other);
  CHECK(classify(exedev::BadRequestError(413, "ssh", "too large")).kind == F::other);
  // exe.dev's 422: the VM may be gone or paused, which the backend checks; unless it is the
  // token's tag scope refusing.
  CHECK(classify(exedev::CommandFailedError(422, "ssh", "vm not found")).kind == F::command_refused);
  CHECK(classify(exedev::CommandFailedError(422, "ssh", "command not allowed by SSH key permissions")).kind == F::access_denied);
  CHECK(classify(exedev::APIError(401, "ssh", "who")).kind == F::access_denied);
  CHECK(classify(exedev::PermissionError(403, "ssh", "no")).kind == F::access_denied);
  CHECK(classify(exedev::VMNotFoundError("vm")).kind == F::vm_not_found);
}

TEST_CASE("failures: opening an SSH connection, by cause") {
  const auto connecting = RouteStep::connecting;
  CHECK(classify(connection_error(false, std::make_error_code(std::errc::connection_refused)), connecting).kind ==
        F::connect_refused);
  const std::error_code refused_by_asio = boost::system::error_code(boost::asio::error::connection_refused);
  CHECK(classify(connection_error(false, refused_by_asio), connecting).kind == F::connect_refused);
  CHECK(classify(connection_error(false, std::make_error_code(std::errc::timed_out)), connecting).kind ==
        F::connect_timed_out);
  for (const auto netdb : {boost::asio::error::host_not_found, boost::asio::error::host_not_found_try_again}) {
    const std::error_code cause = boost::system::error_code(netdb);
    CHECK(classify(connection_error(false, cause), connecting).kind == F::name_not_resolved);
  }
  CHECK(classify(connection_error(false, std::make_error_code(std::errc::connection_reset)), connecting).kind == F::dropped);
  CHECK(classify(connection_error(false, exedev::ssh::libssh2_error(LIBSSH2_ERROR_SOCKET_RECV)), connecting).kind == F::dropped);
  CHECK(classify(exedev::SshAuthenticationError("denied", {}), connecting).kind == F::auth_denied);
  CHECK(classify(exedev::SshKeyUnusableError("encrypted", "key"), connecting).kind == F::key_unusable);
  CHECK(classify(exedev::HostKeyError("changed", "h", "SHA256:a", std::string("SHA256:b")), connecting).kind ==
        F::host_key_rejected);
  // The same causes under an operation are a dropped connection (a keepalive's timeout).
  CHECK(classify(connection_error(true, std::make_error_code(std::errc::timed_out))).kind == F::dropped);
}

TEST_CASE("failures: a standing connection's refusals") {
  const auto refusal = exedev::ssh::libssh2_error(LIBSSH2_ERROR_CHANNEL_FAILURE);
  CHECK(classify(connection_error(false, refusal), RouteStep::operating).kind == F::channel_refused);
  CHECK(classify(connection_error(false, refusal), RouteStep::opening_sftp).kind == F::sftp_refused);
  // A drop while SFTP opened is a drop.
  CHECK(classify(connection_error(false, std::make_error_code(std::errc::connection_reset)), RouteStep::opening_sftp).kind ==
        F::dropped);
}

TEST_CASE("failures: an SFTP call past its operation's deadline is not a dropped connection") {
  const auto deadline = exedev::ssh::deadline_passed();
  // Callers that ask whether it timed out still hear yes.
  CHECK(deadline == std::errc::timed_out);
  CHECK(exedev::ConnectionError("c", false, deadline).cause() == std::errc::timed_out);
  CHECK(classify(connection_error(false, deadline)).kind == F::deadline_passed);
  CHECK(classify(connection_error(false, deadline), RouteStep::opening_sftp).kind == F::deadline_passed);
  // A connection that timed out (a keepalive) is still a drop.
  CHECK_FALSE(exedev::ssh::is_deadline_passed(std::make_error_code(std::errc::timed_out)));
  CHECK(classify(connection_error(false, std::make_error_code(std::errc::timed_out))).kind == F::dropped);
}

TEST_CASE("failures: what is not the route's is passed on as it is") {
  CHECK(classify(boost::system::system_error(boost::asio::error::operation_aborted)).kind == F::cancelled);
  CHECK(classify(std::runtime_error("an output callback threw")).kind == F::other);
  CHECK(classify(std::invalid_argument("bad env name")).kind == F::other);
  CHECK(classify(42).kind == F::other);
}
