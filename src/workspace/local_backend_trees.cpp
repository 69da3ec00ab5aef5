// LocalBackend's tree transfers: both ends on this machine (trees_local.hpp).
#include <exedev/workspace/local_backend.hpp>

#include <filesystem>
#include <stdexcept>

#include "workspace/local_backend_state.hpp"
#include "workspace/trees_local.hpp"

namespace exedev::workspace {

namespace {

std::filesystem::path without_trailing_slash(std::filesystem::path path) {
  return path.has_filename() || !path.has_relative_path() ? path : path.parent_path();
}

std::filesystem::path environment_path(const std::string& path) {
  if (path.empty() || path.front() != '/') throw std::invalid_argument("path must be absolute, got '" + path + "'");
  return without_trailing_slash(std::filesystem::path(path).lexically_normal());
}

std::filesystem::path machine_path(const std::string& path) {
  if (path.empty()) throw std::invalid_argument("the local directory must not be empty");
  return without_trailing_slash(std::filesystem::absolute(path).lexically_normal());
}

}  // namespace

Task<TreeTransferResult> LocalBackend::upload_tree(std::string local_dir, std::string remote_dir, TreeTransferOptions options) {
  const auto to = environment_path(remote_dir);
  state_->ensure_alive();
  co_return detail::copy_local_tree(machine_path(local_dir), to, options);
}

Task<TreeTransferResult> LocalBackend::download_tree(std::string remote_dir, std::string local_dir,
                                                     TreeTransferOptions options) {
  const auto from = environment_path(remote_dir);
  state_->ensure_alive();
  co_return detail::copy_local_tree(from, machine_path(local_dir), options);
}

}  // namespace exedev::workspace
