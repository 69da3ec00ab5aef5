// The shell filesystem's coroutines: each operation sends the scripts of
// shell_filesystem_scripts.cpp through the backend and checks what comes back.
#include "workspace/shell_filesystem.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <stdexcept>

#include <exedev/workspace/workspace.hpp>

#include "common/base64.hpp"
#include "common/coroutines.hpp"
#include "common/exceptions.hpp"
#include "common/inert_text.hpp"
#include "common/random_ids.hpp"
#include "workspace/data_codec.hpp"
#include "workspace/shell_scripts.hpp"
#include "workspace/shield.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace exedev::workspace::detail {

using exedev::detail::base64_encode;

// ---- ShellFilesystem ----

ShellFilesystem::ShellFilesystem(std::shared_ptr<WorkspaceBackend> backend, SupportsCommands& commands)
    : backend_(std::move(backend)), commands_(commands), scripts_(dynamic_cast<SupportsShellScripts*>(backend_.get())),
      transfer_(dynamic_cast<SupportsFileTransfer*>(backend_.get())), limits_(commands.shell_filesystem_limits()) {
  if (limits_.read_page_bytes == 0 || limits_.write_chunk_chars < 4 || limits_.write_window == 0) {
    throw std::invalid_argument("shell filesystem page, chunk and window sizes must be positive");
  }
}

Task<CommandResult> ShellFilesystem::sh(std::string script, std::vector<std::string> args, bool idempotent) {
  // No timeout: a file operation's duration is the transport's business.
  co_return co_await run_shell_script(commands_, scripts_, std::move(script), std::move(args), idempotent);
}

Task<CommandResult> ShellFilesystem::sh_streaming(std::string script, ScriptStdoutSink on_stdout) {
  // Page scripts only read: sending one again is harmless.
  if (scripts_) co_return co_await scripts_->run_script(std::move(script), {}, true, std::move(on_stdout));
  auto result = co_await sh(std::move(script));
  on_stdout(0, result.stdout_text);
  result.stdout_text.clear();
  co_return result;
}

Task<void> ShellFilesystem::read_page(std::string script, PageDecoder& decoder, const std::string& path,
                                      const char* limit_what) {
  CommandResult result;
  try {
    // By reference only: GCC 12 double-frees a lambda's by-value captures inside co_await.
    auto reading = sh_streaming(std::move(script), [&decoder](std::uint64_t offset, std::string_view bytes) {
      decoder.feed(offset, bytes);
    });
    result = co_await std::move(reading);
  } catch (const WorkspaceOutputLimitError&) {
    throw WorkspaceError(fmt::format("shell filesystem {} exceeded command output limit for '{}'", limit_what, path));
  }
  if (result.exit_code != 0) {
    raise_for_private_status(result, path);
    raise_operation_failed(result, path);
  }
}

Task<void> ShellFilesystem::discard(std::string script) { co_await sh(std::move(script)); }

Task<void> ShellFilesystem::check(const CommandResult& result, const std::string& path, bool missing) {
  if (result.exit_code == 0) co_return;
  raise_for_private_status(result, path);
  if (missing) {
    // Not `missing && co_await ...`: GCC 12 miscompiles co_await in a short-circuit operand.
    const bool present = co_await exists(path);
    if (!present) throw path_error(std::errc::no_such_file_or_directory, path);
  }
  raise_operation_failed(result, path);
}

Task<void> ShellFilesystem::cleanup(std::string script) {
  // Best effort: the caller's original error matters more than a failed cleanup.
  try {
    co_await run_shielded(discard(std::move(script)), std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                          std::chrono::duration<double>(kCleanupTimeoutSeconds)));
  } catch (const std::exception&) {
  }
}

Task<FileEntry> ShellFilesystem::stat(std::string path) {
  const auto result = co_await sh(stat_script(path), {}, true);
  co_await check(result, path, true);
  const auto out = parse_stat_output(result.stdout_text, path);
  FileEntry entry;  // named: GCC 12 can lose an aggregate built in co_return
  entry.name = posix_basename(normpath(path));
  entry.path = path;
  entry.is_dir = out.is_dir;
  entry.size = out.size;
  co_return entry;
}

Task<std::string> ShellFilesystem::read_pages(std::string source_word, std::uint64_t size, std::string path,
                                              const char* limit_what, std::string data, std::size_t first_index) {
  // `size` comes from the environment's output: it is trusted for nothing, not even a
  // reservation. A damaged one fails at the first page that holds fewer bytes than it promises.
  const std::uint64_t page = limits_.read_page_bytes;
  for (std::uint64_t index = first_index; data.size() < size; ++index) {
    const auto expected = static_cast<std::size_t>(std::min<std::uint64_t>(page, size - data.size()));
    PageDecoder decoder(data, expected);
    co_await read_page(read_chunk_script(source_word, page, index, limits_.compress), decoder, path, limit_what);
    decoder.finish(path);
  }
  co_return data;
}

Task<Bytes> ShellFilesystem::read_bytes(std::string path) {
  // One request holds the type checks, the size and the first page (or, where the scripts'
  // output is raw and wide, the whole file up to raw_read_bytes); a larger file continues with
  // one request per page.
  std::optional<std::uint64_t> previous;
  const std::size_t page = limits_.read_page_bytes;
  // A file larger than a page comes by transfer when the channel is open: its first script then
  // sends no page. Only asked, never opened here: a small file's read needs no channel. The
  // download never starts before the script has said the path is a regular file: SFTP's open
  // of a FIFO would block sftp-server, and every SFTP call after it, until a writer came.
  const bool transfer_open = transfer_ != nullptr && transfer_->file_transfer_open();
  for (int attempt = 0; attempt < kReadAttempts; ++attempt) {
    std::string data;
    auto decoder = PageDecoder::after_size_line(data, page);
    co_await read_page(read_first_page_script(path, page, limits_.compress, transfer_open, limits_.raw_read_bytes), decoder,
                       path, "read");
    bool damaged = false;
    if (decoder.size() && *decoder.size() > limits_.max_read_bytes) {
      throw WorkspaceLimitError(fmt::format("the file '{}' ({} bytes)", path, *decoder.size()), limits_.max_read_bytes,
                                "ShellFilesystemLimits::max_read_bytes");
    }
    try {
      // The same size twice means the file did not change: the output itself was damaged.
      if (decoder.size()) {
        if (previous == decoder.size()) break;
        previous = decoder.size();
      }
      decoder.finish(path);
      const auto size = *decoder.size();
      if (data.size() < size) {
        const bool by_transfer = co_await transfers(size - data.size());
        if (by_transfer) {
          data = co_await transfer_->download(path, size);
          damaged = data.size() != size;  // it changed since the first page: read it again
        } else {
          const std::size_t next_page = data.empty() ? 0 : 1;
          data = co_await read_pages(shell_quote(path), size, path, "read", std::move(data), next_page);
        }
      }
    } catch (const DamagedOutputError&) {
      damaged = true;
    }
    if (!damaged) co_return data;
  }
  const auto probe = co_await sh(tool_probe_script());
  const auto missing = parse_missing_tools(probe.stdout_text);
  if (!missing.empty()) throw WorkspaceError(missing_tools_message(missing));
  throw DamagedOutputError(path);
}

Task<void> ShellFilesystem::write_block(std::string temp, std::string block, std::size_t block_bytes,
                                        std::size_t index, std::string path) {
  std::vector<std::string> args;
  args.push_back(std::move(block));
  const auto result = co_await sh(write_block_script(temp, block_bytes, index), std::move(args), true);
  co_await check(result, path, false);
}

Task<void> ShellFilesystem::write_blocks(std::string temp, std::string_view encoded, WriteBlocks blocks,
                                         std::size_t first, std::size_t end, std::string path) {
  const auto executor = co_await boost::asio::this_coro::executor;
  for (std::size_t from = first; from < end; from += limits_.write_window) {
    const std::size_t to = std::min(end, from + limits_.write_window);
    using Op = decltype(boost::asio::co_spawn(executor, write_block({}, {}, 0, 0, {}), boost::asio::deferred));
    std::vector<Op> ops;
    for (std::size_t block = from; block < to; ++block) {
      auto writing = write_block(temp, std::string(encoded.substr(blocks.starts[block], blocks.length(block))),
                                 blocks.granule_bytes, blocks.dd_index(block), path);
      ops.push_back(boost::asio::co_spawn(executor, std::move(writing), boost::asio::deferred));
    }
    auto group = boost::asio::experimental::make_parallel_group(std::move(ops));
    auto outcome = co_await group.async_wait(boost::asio::experimental::wait_for_one_error(), boost::asio::use_awaitable);
    exedev::detail::rethrow_first_failure(std::get<0>(outcome), std::get<1>(outcome));
  }
}

Task<void> ShellFilesystem::check_commit(const CommandResult& committed, const std::string& path) {
  if (committed.exit_code == kShortWrite) throw DamagedWriteError(path);
  co_await check(committed, path, false);
}

Task<bool> ShellFilesystem::write_chunked(std::string path, std::string temp_name, std::string encoded,
                                          WriteCheck verify) {
  const auto begun = co_await sh(write_begin_script(path, temp_name, verify.gzip), {}, true);
  if (verify.gzip && begun.exit_code == kMissingGzip) co_return false;
  co_await check(begun, path, false);
  const auto destination = parse_write_begin_output(begun.stdout_text, path);
  const auto temp = posix_join(posix_dirname(destination), temp_name);
  const auto blocks = uniform_write_blocks(encoded.size(), limits_.write_chunk_chars);
  // Errors name the caller's path: `destination` is the environment's answer.
  co_await write_blocks(temp, encoded, blocks, 0, blocks.count(), path);
  const auto committed = co_await sh(commit_script(shell_quote(destination), shell_quote(temp),
                                                   shell_quote(temp + ".decoded"), verify));
  co_await check_commit(committed, path);
  co_return true;
}

Task<bool> ShellFilesystem::transfers(std::uint64_t bytes) {
  if (!transfer_ || bytes <= limits_.write_chunk_chars / 4 * 3) co_return false;
  co_return co_await transfer_->file_transfer_available();
}

namespace {

// The cancellation condition of a begin script and an upload beside it: the upload stops when
// the script fails; the script always runs to its end.
struct StopUploadIfBeginFails {
  boost::asio::cancellation_type_t operator()(const std::exception_ptr& script_error, const CommandResult& begun) const {
    return script_error || begun.exit_code != 0 ? boost::asio::cancellation_type::terminal
                                                : boost::asio::cancellation_type::none;
  }
  boost::asio::cancellation_type_t operator()(const std::exception_ptr&) const {
    return boost::asio::cancellation_type::none;
  }
};

// Rethrows a failure unless it is the server refusing the path itself (a filesystem_error),
// which a second try may not meet.
void rethrow_unless_path_refused(const std::exception_ptr& failure) {
  if (failure && !exedev::detail::exception_as<std::filesystem::filesystem_error>(failure)) {
    std::rethrow_exception(failure);
  }
}

}  // namespace

Task<std::pair<CommandResult, std::exception_ptr>> ShellFilesystem::begin_beside_upload(std::string script,
                                                                                       std::string early_temp,
                                                                                       std::string_view data) {
  const auto executor = co_await boost::asio::this_coro::executor;
  auto group = boost::asio::experimental::make_parallel_group(
      boost::asio::co_spawn(executor, sh(std::move(script), {}, true), boost::asio::deferred),
      boost::asio::co_spawn(executor, transfer_->upload(std::move(early_temp), data), boost::asio::deferred));
  const StopUploadIfBeginFails condition;
  auto outcome = co_await group.async_wait(condition, boost::asio::use_awaitable);
  if (const auto& script_error = std::get<1>(outcome)) std::rethrow_exception(script_error);
  std::pair<CommandResult, std::exception_ptr> result(std::move(std::get<2>(outcome)), std::get<3>(outcome));
  co_return result;
}

Task<void> ShellFilesystem::write_transferred(std::string path, std::string temp_name, Bytes data, WriteCheck verify) {
  // The upload starts beside the begin script, into a temp file beside the path as given: most
  // paths name their destination as it is. When the script finds the destination in another
  // directory (a symlink on the way), or the server refused that upload's path (say, for a
  // parent the script then made), the data goes again, into the temp file beside the
  // destination; any other failure of the upload is the write's. Either temp file is the
  // transfer's own: the script does not make it, and the cleanup removes both.
  verify.transferred = true;
  const auto begin = write_begin_script(path, temp_name, false, false);
  const auto early_temp = temp_beside_path_as_given(path, temp_name);
  CommandResult begun;
  std::exception_ptr early_failure;
  if (early_temp) {
    auto outcome = co_await begin_beside_upload(begin, *early_temp, data);
    begun = std::move(outcome.first);
    early_failure = outcome.second;
  } else {
    begun = co_await sh(begin, {}, true);
  }
  co_await check(begun, path, false);
  rethrow_unless_path_refused(early_failure);
  const auto destination = parse_write_begin_output(begun.stdout_text, path);
  const auto temp = posix_join(posix_dirname(destination), temp_name);
  if (!early_temp || early_failure || *early_temp != temp) {
    if (early_temp && !early_failure) {
      const std::vector<std::string> elsewhere{shell_quote(*early_temp)};  // named: GCC 12 and braced lists in co_await
      co_await discard(remove_files_script(elsewhere));
    }
    co_await transfer_->upload(temp, data);
  }
  const auto committed = co_await sh(commit_script(shell_quote(destination), shell_quote(temp),
                                                   shell_quote(temp + ".decoded"), verify));
  co_await check_commit(committed, path);
}

std::optional<std::string> ShellFilesystem::compressed_payload(const Bytes& data, std::size_t room) const {
  // One command is the floor: data that fits one raw is not worth the environment's gzip.
  const bool fits_one_command = (data.size() + 2) / 3 * 4 <= room;
  if (!limits_.compress || fits_one_command || !compresses_well(data)) return std::nullopt;
  const auto member = gzip_compress(data);
  if (!compression_pays(data.size(), member.size())) return std::nullopt;  // the sample was not typical
  return base64_encode(member);
}

Task<bool> ShellFilesystem::write_encoded(std::string path, std::string temp_name, std::string encoded,
                                          WriteCheck verify) {
  if (encoded.size() > limits_.write_chunk_chars) {
    co_return co_await write_chunked(std::move(path), std::move(temp_name), std::move(encoded), std::move(verify));
  }
  // Temp file, data, checks and rename in one request; sent again, it writes the same file.
  std::vector<std::string> args;
  if (!encoded.empty()) args.push_back(std::move(encoded));
  const auto result = co_await sh(write_whole_script(path, temp_name, verify), std::move(args), true);
  if (verify.gzip && result.exit_code == kMissingGzip) co_return false;
  co_await check_commit(result, path);
  co_return true;
}

Task<void> ShellFilesystem::write_bytes(std::string path, Bytes data) {
  const auto temp_name = ".exedev-" + exedev::detail::random_hex(16) + ".tmp";
  WriteCheck verify;
  verify.size = data.size();
  std::exception_ptr error;
  try {
    const bool by_transfer = co_await transfers(data.size());
    if (by_transfer) {
      // No digest: the transfer's own integrity (SSH's MAC on every packet, each write
      // acknowledged) covers the bytes, and the size check a transfer cut short.
      co_await write_transferred(path, temp_name, std::move(data), verify);
      co_return;
    }
    verify.sha256 = sha256_hex(data);
    auto compressed = compressed_payload(data, limits_.write_chunk_chars);
    bool written = false;
    if (compressed) {
      verify.gzip = true;
      written = co_await write_encoded(path, temp_name, std::move(*compressed), verify);
      if (!written) commands_.note_gzip_missing();
    }
    if (!written) {
      verify.gzip = false;
      co_await write_encoded(path, temp_name, base64_encode(data), verify);
    }
  } catch (...) {
    error = std::current_exception();
  }
  if (error) {
    // The cleanup runs even when the write was cancelled; it is best effort (never throws).
    EXEDEV_AWAIT_DESPITE_CANCELLATION(cleanup_error, cleanup(write_cleanup_script(path, temp_name)));
    std::rethrow_exception(error);
  }
}

Task<std::vector<FileEntry>> ShellFilesystem::list_dir(std::string path) {
  const auto word = listing_temp_word(".exedev-" + exedev::detail::random_hex(16) + ".list");
  std::exception_ptr error;
  CommandResult result;
  ListingOutput out;
  try {
    // Not sent twice: a first run still going when its answer was lost would remove the temp
    // file under the second.
    result = co_await sh(list_script(path, word, limits_.listing_inline_bytes));
    if (result.exit_code == 0) out = parse_listing_output(result.stdout_text, path);
  } catch (...) {
    // Killed or damaged: the script's own trap may not have removed the file.
    error = std::current_exception();
  }
  const std::vector<std::string> leftovers{word};
  if (error) {
    EXEDEV_AWAIT_DESPITE_CANCELLATION(cleanup_error, cleanup(remove_files_script(leftovers)));
    std::rethrow_exception(error);
  }
  co_await check(result, path, false);
  if (!out.paged) co_return parse_listing_records(out.records, path);
  if (out.size > limits_.max_listing_bytes) {
    EXEDEV_AWAIT_DESPITE_CANCELLATION(cleanup_error, cleanup(remove_files_script(leftovers)));
    throw WorkspaceLimitError(fmt::format("the listing of '{}' ({} bytes)", path, out.size), limits_.max_listing_bytes,
                              "ShellFilesystemLimits::max_listing_bytes");
  }
  std::string records;
  try {
    records = co_await read_pages(word, out.size, path, "listing", {}, 0);
  } catch (...) {
    error = std::current_exception();
  }
  EXEDEV_AWAIT_DESPITE_CANCELLATION(cleanup_error, cleanup(remove_files_script(leftovers)));
  if (error) std::rethrow_exception(error);
  co_return parse_listing_records(records, path);
}

Task<void> ShellFilesystem::make_dir(std::string path) {
  const auto result = co_await sh(make_dir_script(path), {}, true);  // mkdir -p
  co_await check(result, path, false);
}

Task<void> ShellFilesystem::remove(std::string path) {
  const auto root = co_await backend_->working_dir();
  const auto result = co_await sh(remove_script(path, root));
  if (result.exit_code == kRefusedRoot) throw std::invalid_argument("cannot remove the workspace root or its ancestor");
  co_await check(result, path, false);
}

Task<bool> ShellFilesystem::exists(std::string path) {
  const auto result = co_await sh(exists_script(path), {}, true);
  if (result.exit_code == 0) co_return true;
  if (result.exit_code == 1) co_return false;
  // A broken transport (ssh's 255, a missing `test`'s 127) must never read as "absent".
  const auto reason = strip(result.stderr_text);
  const auto message = reason.empty()
                           ? fmt::format("could not check whether '{}' exists (exit code {})", path, result.exit_code)
                           : exedev::detail::inert_text(reason);
  throw WorkspaceScriptError(message, PartialOutput{result.stdout_text, result.stderr_text});
}

Task<std::string> ShellFilesystem::realpath(std::string path) {
  const auto result = co_await sh(realpath_script(path), {}, true);
  if (result.exit_code != 0) {
    raise_for_private_status(result, path);
    raise_operation_failed(result, path);
  }
  co_return parse_realpath_output(result.stdout_text, path);
}

}  // namespace exedev::workspace::detail
