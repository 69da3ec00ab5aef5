#pragma once
// What a command had written when it was stopped, cut off or lost: the one payload of every
// error that carries output, in the client (errors.hpp) and the workspace layer
// (workspace/errors.hpp, sandbox/errors.hpp).

#include <string>
#include <utility>

namespace exedev {

/// A command's output up to the point where it was stopped or lost. The client's errors hold
/// the bytes as they arrived; the workspace layer's the same as UTF-8 text, undecodable bytes
/// replaced by U+FFFD.
struct PartialOutput {
  std::string stdout_data{};
  std::string stderr_data{};

  friend bool operator==(const PartialOutput&, const PartialOutput&) = default;
};

/// The part of an error that carries a command's partial output: `catch (const
/// exedev::WithPartialOutput& e)` catches every such error of every layer.
class WithPartialOutput {
 public:
  explicit WithPartialOutput(PartialOutput output) noexcept : output_(std::move(output)) {}
  virtual ~WithPartialOutput() = default;

  [[nodiscard]] const PartialOutput& output() const noexcept { return output_; }

 protected:
  WithPartialOutput(const WithPartialOutput&) = default;
  WithPartialOutput& operator=(const WithPartialOutput&) = default;

 private:
  PartialOutput output_;
};

}  // namespace exedev
