// The client's error model: every error's code in exedev's category, what is worth retrying and
// what may have run, the Retry-After a 429 carried, and the one payload of partial output.
#include "client/api_response.hpp"

#include <exedev/errors.hpp>
#include <exedev/sandbox/errors.hpp>
#include <exedev/ssh/errors.hpp>

#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <system_error>
#include <vector>

using namespace exedev;
using namespace std::chrono_literals;

namespace {

// The error throw_api_error throws for `status`, caught as the base every client error shares.
struct Caught {
  std::error_code code;
  bool retryable = false;
  bool may_have_run = false;
};

Caught api_error(unsigned status) {
  try {
    detail::throw_api_error(status, "ls", R"({"error":"boom"})", {});
  } catch (const Error& e) {
    return {e.code(), e.is_retryable(), e.may_have_run()};
  }
  FAIL("no exception");
  return {};
}

}  // namespace

TEST_CASE("errors: each status has its code, and says whether to retry and whether it may have run") {
  struct Row {
    unsigned status;
    errc code;
    bool retryable;
    bool may_have_run;
  };
  const std::vector<Row> rows = {
      {400, errc::bad_request, false, false},          {405, errc::bad_request, false, false},
      {413, errc::bad_request, false, false},          {401, errc::authentication_failed, false, false},
      {403, errc::permission_denied, false, false},    {404, errc::unknown_command, false, false},
      {422, errc::command_failed, false, false},       {429, errc::rate_limited, true, false},
      {500, errc::server_error, true, true},           {502, errc::server_error, true, true},
      {503, errc::server_error, true, true},           {504, errc::gateway_timeout, true, true},
      {409, errc::unexpected_status, false, true},     {302, errc::unexpected_status, false, true},
  };
  for (const auto& row : rows) {
    INFO("HTTP " << row.status);
    const auto caught = api_error(row.status);
    CHECK(caught.code == row.code);
    CHECK(caught.code.category() == client_category());
    CHECK(caught.retryable == row.retryable);
    CHECK(caught.may_have_run == row.may_have_run);
  }
  // An error object in a 200 answer is the command failing, as a 422 is.
  try {
    detail::check_lobby_answer(200, "new", R"({"error":"VM name \"x\" is not available"})", {});
    FAIL("no exception");
  } catch (const Error& e) {
    CHECK(e.code() == errc::command_failed);
    CHECK_FALSE(e.may_have_run());
  }
  // No token: status 0, an authentication failure.
  CHECK(api_error(0).code == errc::authentication_failed);
}

TEST_CASE("errors: the errors that are not statuses") {
  const ConnectionError not_sent("c", false, std::make_error_code(std::errc::connection_refused));
  CHECK(not_sent.code() == errc::connection_failed);
  CHECK(not_sent.is_retryable());
  CHECK_FALSE(not_sent.may_have_run());
  CHECK(not_sent.cause() == std::errc::connection_refused);
  const ConnectionError sent("c", true, std::make_error_code(std::errc::connection_reset));
  CHECK(sent.is_retryable());
  CHECK(sent.may_have_run());
  CHECK_FALSE(ConnectionError("no cause", false).cause());

  const ProtocolError unreadable("p");
  CHECK(unreadable.code() == errc::protocol_error);
  CHECK_FALSE(unreadable.is_retryable());
  CHECK(unreadable.may_have_run());

  const OutcomeUnknownError unknown("u", PartialOutput{"out", "err"}, true);
  const RunTimeoutError timeout("t", PartialOutput{"so far"});
  const OutputLimitError limit("l", 1024, PartialOutput{"", "e"});
  CHECK(unknown.code() == errc::outcome_unknown);
  CHECK(timeout.code() == errc::run_timeout);
  CHECK(limit.code() == errc::output_limit);
  for (const Error* e : std::vector<const Error*>{&unknown, &timeout, &limit}) {
    CHECK_FALSE(e->is_retryable());
    CHECK(e->may_have_run());
  }
  CHECK(unknown.vm_gone());
  CHECK(limit.limit() == 1024);
}

TEST_CASE("errors: the SSH transport's refusals are neither retryable nor may have run") {
  const HostKeyError host_key("h", "[vm]:2222", "SHA256:new", std::string("SHA256:old"));
  const SshAuthenticationError auth("a", {"agent key SHA256:x", "/home/u/.ssh/id_ed25519"});
  const SshKeyUnusableError unusable("k", "/keys/id");
  const SshMisrouteError misrouted("m", "SHA256:key", "the lobby's registration shell");
  const TransportUnsupportedError no_tcp("forwarding port 8000 of VM \"v\"", "exe.dev's /exec API", "no channel for TCP");
  CHECK(no_tcp.code() == errc::transport_unsupported);
  CHECK(no_tcp.transport() == "exe.dev's /exec API");
  CHECK(std::string(no_tcp.what()) == "forwarding port 8000 of VM \"v\" is not possible over exe.dev's /exec API: no channel for TCP");
  CHECK(host_key.code() == errc::host_key_rejected);
  CHECK(auth.code() == errc::ssh_authentication_failed);
  CHECK(unusable.code() == errc::ssh_key_unusable);
  CHECK(misrouted.code() == errc::ssh_misrouted);
  CHECK(misrouted.key_fingerprint() == "SHA256:key");
  CHECK(misrouted.landing() == "the lobby's registration shell");
  for (const Error* e : std::vector<const Error*>{&host_key, &auth, &unusable, &misrouted, &no_tcp}) {
    CHECK(e->code().category() == client_category());
    CHECK_FALSE(e->is_retryable());
    CHECK_FALSE(e->may_have_run());
  }
  CHECK(host_key.host() == "[vm]:2222");
  CHECK(host_key.offered_fingerprint() == "SHA256:new");
  CHECK(host_key.recorded_fingerprint() == "SHA256:old");
  CHECK(auth.tried().size() == 2);
  CHECK(unusable.source() == "/keys/id");
  // An unusable key is an authentication failure to a caller that catches those.
  try {
    throw SshKeyUnusableError("k", "/keys/id");
  } catch (const SshAuthenticationError& e) {
    CHECK(e.code() == errc::ssh_key_unusable);
  }
}

TEST_CASE("errors: one payload carries partial output, caught the same way for every error") {
  const auto output_of = [](auto error) {
    try {
      throw error;
    } catch (const WithPartialOutput& e) {
      return e.output();
    }
  };
  CHECK(output_of(OutcomeUnknownError("u", PartialOutput{"a", "b"})) == PartialOutput{"a", "b"});
  CHECK(output_of(RunTimeoutError("t", PartialOutput{"c", "d"})) == PartialOutput{"c", "d"});
  CHECK(output_of(OutputLimitError("l", 1, PartialOutput{"e", "f"})) == PartialOutput{"e", "f"});
}

TEST_CASE("errors: a 429 keeps the Retry-After it came with") {
  try {
    detail::throw_api_error(429, "new", R"({"error":"rate limited"})", {}, 3000ms);
    FAIL("no exception");
  } catch (const RateLimitedError& e) {
    CHECK(e.status() == 429);
    CHECK(e.command() == "new");
    REQUIRE(e.retry_after());
    CHECK(*e.retry_after() == 3000ms);
  }
  try {
    detail::check_lobby_answer(429, "ls", "", {});
    FAIL("no exception");
  } catch (const RateLimitedError& e) {
    CHECK_FALSE(e.retry_after());
  }
}

TEST_CASE("errors: the category names every code, and codes are distinct") {
  CHECK(std::string(client_category().name()) == "exedev");
  std::set<std::string> messages;
  for (int value = static_cast<int>(errc::bad_request); value <= static_cast<int>(errc::ssh_misrouted); ++value) {
    const std::error_code code = make_error_code(static_cast<errc>(value));
    CHECK(code);
    CHECK(code.message() != "unknown exedev error");
    messages.insert(code.message());
  }
  CHECK(messages.size() == static_cast<std::size_t>(errc::ssh_misrouted));
  CHECK(std::error_code(999, client_category()).message() == "unknown exedev error");
  CHECK(std::error_code(errc::rate_limited) != std::error_code(errc::server_error));
}
