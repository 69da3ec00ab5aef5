#include "tools/content_hash.hpp"

namespace exedev::tools::detail {

std::string content_hash(std::string_view bytes) { return sha256_hex(bytes).substr(0, 12); }

}  // namespace exedev::tools::detail
