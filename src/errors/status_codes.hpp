#pragma once
// The one mapping of exe.dev's HTTP statuses to error codes, shared by APIError (errors.cpp) and
// the client's answer reader (client/api_response.cpp, which picks the exception type from it).

#include <exedev/error_code.hpp>

namespace exedev::detail {

/// The code of an error answer with this HTTP status (0: no token; 200: an error object in a
/// success answer, which exe.dev sends for some failed commands).
[[nodiscard]] errc errc_for_status(unsigned status);

}  // namespace exedev::detail
