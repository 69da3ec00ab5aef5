#pragma once
// What a failed Client::run or Client::run_script means for a workspace, sans-IO: the one
// classification of the client's errors that SandboxBackend acts on (tested without sockets in
// tests/unit/sandbox/run_errors_test.cpp).

#include <exedev/partial_output.hpp>

#include <cstddef>
#include <exception>

namespace exedev::detail {

struct RunErrorClass {
  enum class Kind {
    not_run,       ///< nothing ran (or not a client error at all): rethrown as it is
    timeout,       ///< RunTimeoutError: the command passed its timeout and was stopped
    output_limit,  ///< OutputLimitError: the command wrote too much and was stopped
    refused,       ///< exe.dev refused the command (422): the VM may be gone or paused
    may_have_run,  ///< the command may have run; its result can't be known
  };
  Kind kind = Kind::not_run;
  std::size_t limit = 0;  ///< output_limit: the limit passed
  PartialOutput output;   ///< timeout, output_limit, may_have_run: what arrived, raw
};

[[nodiscard]] RunErrorClass classify_run_error(const std::exception_ptr& error);

}  // namespace exedev::detail
