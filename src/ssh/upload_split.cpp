#include "ssh/upload_split.hpp"

namespace exedev::ssh {

std::optional<UploadSplit> upload_split(std::size_t size) noexcept {
  if (size <= 2 * sftp_write_window) return std::nullopt;
  UploadSplit split;
  split.near_size = size / 2;
  return split;
}

}  // namespace exedev::ssh
