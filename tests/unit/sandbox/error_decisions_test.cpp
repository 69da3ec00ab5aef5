// The sandbox's decisions about client errors read the error's code and may_have_run(), so they
// agree with them for every status class: a create whose outcome is unknown is exactly one that
// may have run, a run that may have run is never retried as "not run", and only 401 / 403 / a
// tag-scope 422 become ExeDevAccessError.
#include "client/api_response.hpp"
#include "sandbox/core.hpp"
#include "sandbox/run_errors.hpp"

#include <boost/asio/error.hpp>
#include <boost/system/system_error.hpp>

#include <exedev/errors.hpp>
#include <exedev/sandbox/errors.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace exedev;

namespace {

std::exception_ptr answered(unsigned status, std::string message = "boom") {
  try {
    detail::throw_api_error(status, "new", R"({"error":")" + message + R"("})", {});
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

bool may_have_run(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    return e.may_have_run();
  }
}

// What rethrow_access_mapped makes of `error`: the access error's status, or 0 when it passes
// the error on unchanged.
unsigned access_status(const std::exception_ptr& error) {
  try {
    detail::rethrow_access_mapped(error);
  } catch (const ExeDevAccessError& e) {
    return e.status().value_or(1);
  } catch (...) {
    CHECK(std::current_exception() == error);
  }
  return 0;
}

}  // namespace

TEST_CASE("error decisions: one per status class, agreeing with may_have_run()") {
  struct Row {
    unsigned status;
    bool may_have_run;
    unsigned access;  ///< what rethrow_access_mapped makes of it (0: unchanged, 1: no status)
  };
  const std::vector<Row> rows = {
      {0, false, 1},     {200, false, 0},   {301, true, 0},    {304, true, 0},  {400, false, 0},
      {401, false, 401}, {403, false, 403}, {404, false, 0},   {405, false, 0}, {413, false, 0},
      {418, true, 0},    {422, false, 0},   {429, false, 0},   {500, true, 0},  {502, true, 0},
      {503, true, 0},    {504, true, 0},    {599, true, 0},    {600, true, 0},
  };
  for (const auto& row : rows) {
    SECTION("HTTP " + std::to_string(row.status)) {
      const auto error = answered(row.status);
      CHECK(may_have_run(error) == row.may_have_run);
      CHECK(detail::is_unknown_create_outcome(error) == row.may_have_run);
      using F = detail::RouteFailure;
      const auto run = detail::classify_failure(error, detail::RouteStep::operating);
      CHECK(run.may_have_run == row.may_have_run);
      if (run.kind != F::command_refused && run.kind != F::access_denied) {
        CHECK((run.kind == F::outcome_unknown) == row.may_have_run);
      }
      CHECK(access_status(error) == row.access);
    }
  }
}

TEST_CASE("error decisions: connections, unreadable answers and cancellations") {
  const auto unsent = std::make_exception_ptr(ConnectionError("refused", false));
  const auto sent = std::make_exception_ptr(ConnectionError("reset", true));
  const auto unreadable = std::make_exception_ptr(ProtocolError("bad JSON"));
  for (const auto& error : {unsent, sent, unreadable}) {
    CHECK(detail::is_unknown_create_outcome(error) == may_have_run(error));
    CHECK(access_status(error) == 0);
  }
  CHECK_FALSE(detail::is_unknown_create_outcome(unsent));
  CHECK(detail::is_unknown_create_outcome(sent));
  const auto cancelled = std::make_exception_ptr(boost::system::system_error(boost::asio::error::operation_aborted));
  CHECK_FALSE(detail::is_unknown_create_outcome(cancelled));
}

TEST_CASE("error decisions: a tag-scope refusal (422) is an access error, another 422 is not") {
  CHECK(access_status(answered(422, "command not allowed by SSH key permissions")) == 403);
  CHECK(access_status(answered(422, "SSH key scoped to tag agents")) == 403);
  CHECK(access_status(answered(422, "VM name taken")) == 0);
}
