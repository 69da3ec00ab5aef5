#pragma once
// The Shell tools as a model sees them (internal): each one's description and parameters.

#include "tools/schema.hpp"

#include <string>

namespace exedev::tools::detail {

/// Tool `name` (one of the Shell's tools) as the reference's docstrings and signatures describe it.
[[nodiscard]] ToolSpec shell_tool_spec(const std::string& name);

}  // namespace exedev::tools::detail
