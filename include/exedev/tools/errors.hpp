#pragma once
// Errors of the tools layer that are not tool outcomes.

#include <stdexcept>

namespace exedev::tools {

/// A configuration mistake the developer must fix, never the model: the reference harness's
/// UserError (a tool set used over a workspace it cannot use, a root_dir that cannot contain
/// the working directory). An std::invalid_argument, like every rejected option.
class UserError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

}  // namespace exedev::tools
