// SandboxBackend's tree transfers (SupportsTreeTransfer; docs/sandbox.md, "Trees"). This
// machine's end is src/workspace/trees_local.*; the VM's end is a few scripts run through
// run_script (so the same code serves SSH and /exec), with GNU tar, find and coreutils:
//
// - the listing: the destination's manifest (find, sha256sum), the directories that excludes
//   name pruned on the VM;
// - the archive (upload) or the path list (download) travels as a file in chunks, each written
//   at its own offset by its own script (so a lost answer is resent, several fly at once, and
//   the number of scripts follows the compressed size); over /exec each fills a request body;
// - the apply: checks the file's size and SHA-256, stages a hard-linked copy of the destination
//   beside it, removes what went away, extracts, and moves the stage into place by renames;
// - download: tar of the listed paths, gzip when it pays, made by a command (run: it outlives
//   one /exec request, which exe.dev ends at 30 s) stopped past archive_timeout, then read
//   back in pages;
// - the job directory beside the destination is removed at the end, also after a failure or a
//   cancellation (bounded).
#include <exedev/sandbox/sandbox_backend.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <system_error>

#include "common/base64.hpp"
#include "common/exceptions.hpp"
#include "common/script_path.hpp"
#include "common/coroutines.hpp"
#include "common/random_ids.hpp"
#include "common/shell_quote.hpp"
#include "workspace/data_codec.hpp"
#include "workspace/shell_filesystem.hpp"
#include "workspace/shield.hpp"
#include "workspace/trees_local.hpp"

#include <exedev/workspace/workspace.hpp>

namespace exedev {
namespace asio = boost::asio;
using workspace::TreeProgress;
using workspace::TreeTransferOptions;
using workspace::TreeTransferResult;
using namespace workspace::detail;

namespace {

// Chunks of file data in flight at once (B3 found 8 faster than 4 at 20 ms of latency).
constexpr std::size_t kChunkWindow = 8;
// Over SSH a chunk is a channel's stdin, not a request: larger chunks, fewer scripts.
constexpr std::size_t kSshChunkChars = 4 * 1024 * 1024;
// Bytes of the archive read back per script (its base64 stays under the 8 MiB output cap).
constexpr std::size_t kPageBytes = 4 * 1024 * 1024;
constexpr auto kCleanupLimit = std::chrono::seconds(10);
// Bound of one chunk's script once it is let finish after a cancellation.
constexpr auto kChunkLimit = std::chrono::seconds(60);
// Paths in the scripts are budgeted up to this many bytes (as the file scripts are).
constexpr std::size_t kPathAllowance = 1024;

// Exit codes of the scripts.
constexpr int kNotADirectory = 20;
constexpr int kCannotEnter = 21;
constexpr int kDamaged = 31;

// Decodes base64 argument N into variable `name`, exactly (trailing newlines kept).
std::string decode_arg(const char* name, int n) {
  return fmt::format("{0}=$(printf %s \"${1}\" | base64 -d; echo x); {0}=${{{0}%x}}\n", name, n);
}

// $1: the directory; $2...: names of directories to prune. Prints nothing when the directory
// does not exist, else its listing (parse_tree_listing).
std::string listing_script() {
  return decode_arg("dir", 1) +
         "shift\n"
         "[ -e \"$dir\" ] || [ -L \"$dir\" ] || exit 0\n"
         "[ -d \"$dir\" ] || exit 20\n"
         "cd -P -- \"$dir\" || exit 21\n"
         "for p do shift; p=$(printf %s \"$p\" | base64 -d; echo x); set -- \"$@\" -type d -name \"${p%x}\" -prune -o; done\n"
         "find . -mindepth 1 \"$@\" -printf '%y %m %s %P\\0%l\\0' || exit 22\n"
         "printf '\\0'\n"
         "find . -mindepth 1 \"$@\" -type f -print0 | xargs -0r sha256sum -z 2>/dev/null\n"
         "exit 0";
}

std::string chunk_script(const std::string& file, std::size_t block_bytes, std::size_t index) {
  const std::string quoted = detail::sh_single_quote(file);
  return fmt::format("f={0}; mkdir -p -- \"${{f%/*}}\" || exit 1\n"
                     "printf %s \"$1\" | base64 -d | dd of=\"$f\" bs={1} seek={2} conv=notrunc 2>/dev/null",
                     quoted, block_bytes, index);
}

// Checks the blob, stages the new tree and moves it into place ($1: job dir, $2: destination).
std::string apply_script(std::uint64_t blob_size, const std::string& sha256, std::size_t removals, bool gzip) {
  return decode_arg("job", 1) + decode_arg("dest", 2) +
         fmt::format(
             "blob=\"$job/blob\"; stage=\"$job/stage\"\n"
             "[ -L \"$dest\" ] && dest=$(readlink -f -- \"$dest\")\n"
             "[ -e \"$dest\" ] && ! [ -d \"$dest\" ] && exit 20\n"
             "size=$(wc -c < \"$blob\") && [ $size -eq {0} ] || exit 31\n"
             "sum=$(sha256sum < \"$blob\") && [ \"${{sum%% *}}\" = {1} ] || exit 31\n"
             "if [ -d \"$dest\" ]; then cp -al -- \"$dest\" \"$stage\" || exit 32\n"
             "else mkdir -p -- \"$stage\" || exit 32; fi\n"
             "if [ {2} -gt 0 ]; then head -c {2} \"$blob\" | (cd -- \"$stage\" && xargs -0r rm -rf --) || exit 33; fi\n"
             "tail -c +{3} \"$blob\" | {4} tar -x -p --no-same-owner -f - -C \"$stage\" || exit 34\n"
             "if [ -d \"$dest\" ]; then\n"
             "  mv -- \"$dest\" \"$job/old\" || exit 35\n"
             "  mv -- \"$stage\" \"$dest\" || {{ mv -- \"$job/old\" \"$dest\"; exit 35; }}\n"
             "else mkdir -p -- \"${{dest%/*}}/\" && mv -- \"$stage\" \"$dest\" || exit 35; fi\n"
             "rm -rf -- \"$job\"",
             blob_size, sha256, removals, removals + 1, gzip ? "gzip -dc |" : "");
}

// Archives the listed paths of $2 into $1/out (gzip when it pays); prints "<tar size> <size>
// <gz|tar> <sha256>".
std::string archive_script(bool list_gzip) {
  return decode_arg("job", 1) + decode_arg("dir", 2) +
         fmt::format(
             "cd -P -- \"$dir\" || exit 21\n"
             "{0} \"$job/list\" | tar -c --format=pax --hard-dereference --null --no-recursion --verbatim-files-from -T - -f \"$job/out.tar\" || exit 40\n"
             "t=$(wc -c < \"$job/out.tar\") || exit 40\n"
             "kind=tar\n"
             "if command -v gzip >/dev/null 2>&1 && gzip -c \"$job/out.tar\" > \"$job/out.gz\"; then\n"
             "  g=$(wc -c < \"$job/out.gz\"); [ $((g * 10)) -le $((t * 9)) ] && kind=gz\n"
             "fi\n"
             "mv -f -- \"$job/out.$kind\" \"$job/out\" || exit 40\n"
             "s=$(sha256sum < \"$job/out\") || exit 40\n"
             "printf '%s %s %s %s\\n' $t $(wc -c < \"$job/out\") $kind \"${{s%% *}}\"",
             list_gzip ? "gzip -dc <" : "cat");
}

std::string page_script(const std::string& file, std::size_t page_bytes, std::size_t index) {
  return fmt::format("dd if={0} bs={1} skip={2} count=1 2>/dev/null | base64", detail::sh_single_quote(file), page_bytes, index);
}

std::string remove_job_script(const std::string& job) { return "rm -rf -- " + detail::sh_single_quote(job); }

std::string arg(std::string_view bytes) { return detail::base64_encode(bytes); }

std::string job_path(const std::string& destination) {
  const auto slash = destination.rfind('/');
  return (slash == 0 ? std::string() : destination.substr(0, slash)) + "/." + destination.substr(slash + 1) +
         ".exedev-tree-" + detail::random_hex(8);
}

[[noreturn]] void throw_step(const std::string& what, const std::string& path, int exit_code) {
  if (exit_code == kNotADirectory) {
    throw std::filesystem::filesystem_error(what, path, std::make_error_code(std::errc::not_a_directory));
  }
  if (exit_code == kCannotEnter) {
    throw std::filesystem::filesystem_error(what, path, std::make_error_code(std::errc::permission_denied));
  }
  throw workspace::WorkspaceError(what + " \"" + path + "\" failed (exit code " + std::to_string(exit_code) + ")");
}

// Raw stdout of a script, assembled from the sink (a resent script starts again at 0).
struct Collected {
  std::string bytes;
  workspace::ScriptStdoutSink sink() {
    return [this](std::uint64_t offset, std::string_view piece) {
      if (offset < bytes.size()) bytes.resize(offset);
      bytes.append(piece);
    };
  }
};

void report(const TreeTransferOptions& options, const TreeProgress& progress) {
  if (options.on_progress) options.on_progress(progress);
}

// The VM's end of one tree transfer, through the backend's scripts.
class TreeJob {
 public:
  TreeJob(SandboxBackend& backend, std::string job) : backend_(backend), job_(std::move(job)) {}

  Task<workspace::CommandResult> script(std::string text, std::vector<std::string> args, bool idempotent,
                                        workspace::ScriptStdoutSink sink) {
    co_return co_await backend_.run_script(std::move(text), std::move(args), idempotent, std::move(sink));
  }

  /// Archives the listed paths of `dir` into `<job>/out` and returns the script's answer line.
  /// A command, not a script: making the archive of a large tree takes longer than one /exec
  /// request may last, and run() follows a command across requests; it is stopped past
  /// `timeout`. Its stderr is dropped (the steps report by exit code), so it cannot fill the
  /// command's output limit.
  Task<std::string> archive(std::string dir, bool list_gzip, std::chrono::milliseconds timeout) {
    std::string script(detail::script_path_line);
    script += "exec 2>/dev/null\n" + archive_script(list_gzip);
    std::vector<std::string> argv{"/bin/sh", "-c", std::move(script), "sh", arg(job_), arg(dir)};
    const auto command = workspace::Command::argv(std::move(argv));
    workspace::RunOptions options;
    if (timeout.count() > 0) options.timeout = std::chrono::duration_cast<workspace::Seconds>(timeout);
    workspace::CommandResult archived;
    try {
      archived = co_await backend_.run(command, options);
    } catch (const workspace::WorkspaceTimeoutError&) {
      detail::throw_nested(std::current_exception(),
                           workspace::WorkspaceTimeoutError(
                               fmt::format("archiving the tree \"{}\" on the VM took longer than {} s "
                                           "(TreeTransferOptions::archive_timeout) and was stopped",
                                           dir, std::chrono::duration_cast<std::chrono::seconds>(timeout).count()),
                               PartialOutput{}));
    }
    if (archived.exit_code != 0) throw_step("archiving the tree", dir, archived.exit_code);
    co_return std::move(archived.stdout_text);
  }

  /// The listing of `dir` (nullopt when it does not exist).
  Task<std::optional<ListedTree>> list(std::string dir, std::vector<std::string> prune) {
    std::vector<std::string> args{arg(dir)};
    for (const auto& name : prune) args.push_back(arg(name));
    Collected out;
    const auto result = co_await script(listing_script(), std::move(args), true, out.sink());
    if (result.exit_code != 0) throw_step("listing the tree", dir, result.exit_code);
    if (out.bytes.empty()) co_return std::nullopt;
    auto listed = parse_tree_listing(out.bytes);
    if (!listed) throw workspace::WorkspaceError("the listing of \"" + dir + "\" is malformed");
    co_return std::move(*listed);
  }

  /// Writes `data` to `<job>/<name>` in chunks, `on_chunk(bytes written so far)` after each.
  Task<void> send(std::string name, std::string data, std::function<void(std::uint64_t)> on_chunk) {
    const std::string file = job_ + "/" + name;
    const std::size_t chars = co_await chunk_chars(file, data.size());
    const std::size_t block = chars / 4 * 3;
    const std::size_t chunks = std::max<std::size_t>(1, (data.size() + block - 1) / block);
    const auto executor = co_await asio::this_coro::executor;
    std::uint64_t sent = 0;
    const std::function<void(std::uint64_t)> on_written = [&](std::uint64_t bytes) {
      sent += bytes;
      if (on_chunk) on_chunk(sent);
    };
    // A sliding window: kChunkWindow writers, each taking the next chunk as soon as its last
    // one is written (no wait for the slowest of a batch).
    std::size_t next = 0;
    const std::size_t writers = std::min(chunks, kChunkWindow);
    using Op = decltype(asio::co_spawn(executor, write_chunks(file, data, block, chunks, next, on_written), asio::deferred));
    std::vector<Op> ops;
    for (std::size_t i = 0; i < writers; ++i) {
      auto writing = write_chunks(file, data, block, chunks, next, on_written);
      ops.push_back(asio::co_spawn(executor, std::move(writing), asio::deferred));
    }
    auto group = asio::experimental::make_parallel_group(std::move(ops));
    auto outcome = co_await group.async_wait(asio::experimental::wait_for_one_error(), asio::use_awaitable);
    detail::rethrow_first_failure(std::get<0>(outcome), std::get<1>(outcome));
  }

  /// The file `<job>/out` (`size` bytes), read in pages, each to `on_page` as it arrives.
  Task<void> fetch(std::uint64_t size, std::function<void(std::string_view)> on_page) {
    const std::string file = job_ + "/out";
    const std::size_t pages = static_cast<std::size_t>((size + kPageBytes - 1) / kPageBytes);
    std::uint64_t got = 0;
    for (std::size_t index = 0; index < pages; ++index) {
      Collected out;
      const auto result = co_await script(page_script(file, kPageBytes, index), {}, true, out.sink());
      const auto page = detail::base64_decode(out.bytes);
      if (result.exit_code != 0 || !page) throw_step("reading the tree archive", file, result.exit_code);
      // Exactly the page's share of `size`: the archive never grows past what was checked.
      if (page->size() != std::min<std::uint64_t>(kPageBytes, size - got)) {
        throw workspace::WorkspaceError("the tree archive arrived damaged from the VM");
      }
      got += page->size();
      on_page(*page);
    }
  }

  /// Removes the job directory, also after a failure or a cancellation (best effort, bounded).
  Task<void> remove() {
    try {
      auto removing = [](TreeJob& job) -> Task<void> {
        co_await job.script(remove_job_script(job.job_), {}, true, {});
      }(*this);
      co_await run_shielded(std::move(removing), kCleanupLimit);
    } catch (const std::exception&) {
    }
  }

  [[nodiscard]] const std::string& path() const noexcept { return job_; }

 private:
  // Writes chunks `next`, `next + 1`... (shared with the other writers) until none is left.
  Task<void> write_chunks(const std::string& file, const std::string& data, std::size_t block, std::size_t chunks,
                          std::size_t& next, const std::function<void(std::uint64_t)>& on_written) {
    while (next < chunks) {
      const std::size_t index = next++;
      const auto piece = std::string_view(data).substr(index * block, block);
      auto writing = write_chunk(file, arg(piece), block, index, piece.size(), on_written);
      // Shielded: a chunk once sent is let finish (a cancellation stops the writer before its
      // next chunk instead), so that no chunk script can run after the cleanup has removed the
      // job directory and create it again.
      co_await run_shielded(std::move(writing), kChunkLimit);
    }
  }

  Task<void> write_chunk(std::string file, std::string encoded, std::size_t block, std::size_t index, std::size_t bytes,
                         const std::function<void(std::uint64_t)>& on_written) {
    std::vector<std::string> args;
    args.push_back(std::move(encoded));
    const auto result = co_await script(chunk_script(file, block, index), std::move(args), true, {});
    if (result.exit_code != 0) throw_step("writing the tree archive", file, result.exit_code);
    on_written(bytes);
  }

  // Base64 characters per chunk: over /exec as many as fill a request body with the largest
  // chunk script this file can need, over SSH kSshChunkChars.
  Task<std::size_t> chunk_chars(std::string file, std::size_t bytes) {
    if (backend_.transport_in_use() == Transport::ssh) co_return kSshChunkChars;
    if (file.size() > kPathAllowance) throw std::invalid_argument("the tree's path is too long for a request");
    const std::string vm = backend_.ref() ? backend_.ref()->id : std::string(52, 'v');
    const std::size_t limit = max_request_body_bytes - 1;
    const auto request = [&](std::size_t chars) {
      return script_request_bytes(vm, chunk_script(file, chars / 4 * 3, bytes), {std::string(chars, 'A')});
    };
    std::size_t chars = (limit - (request(4) - 4)) & ~std::size_t{3};
    while (chars > 4 && request(chars) > limit) chars -= 4;
    co_return chars;
  }

  SandboxBackend& backend_;
  std::string job_;
};

// The absolute, normalized remote directory (the working directory is asked only for a
// relative one).
Task<std::string> remote_path(SandboxBackend& backend, std::string path) {
  if (path.empty()) throw std::invalid_argument("the remote directory must not be empty");
  if (path.front() != '/') {
    const std::string working = co_await backend.working_dir();
    path = working + "/" + path;
  }
  std::string absolute = workspace::normpath(path);
  if (absolute == "/" || absolute == "//") throw std::invalid_argument("a tree transfer cannot replace \"/\"");
  co_return absolute;
}

}  // namespace

Task<TreeTransferResult> SandboxBackend::upload_tree(std::string local_dir, std::string remote_dir, TreeTransferOptions options) {
  const std::string destination = co_await remote_path(*this, std::move(remote_dir));
  const TreeFilter filter(options.excludes);
  TreeTransferResult result;
  const std::filesystem::path source_root = std::filesystem::absolute(local_dir);
  if (!std::filesystem::is_directory(source_root)) {
    throw std::filesystem::filesystem_error("cannot upload the tree", source_root,
                                            std::make_error_code(std::errc::not_a_directory));
  }
  TreeManifest source = list_local_tree(source_root, filter, result.refused);
  for (auto& path : drop_escaping_symlinks(source)) result.refused.push_back(std::move(path));
  count_tree(source, result);

  TreeJob job(*this, job_path(destination));
  auto listed = co_await job.list(destination, filter.prunable_names());
  TreeManifest present;
  if (listed) {
    present = std::move(listed->manifest);
    apply_filter(present, filter);
  }
  const TreePlan plan = plan_tree(source, present);
  result.entries_removed = plan.remove.size();
  for (const auto& path : plan.send) result.files_sent += source.at(path).type == TreeEntryType::file ? 1 : 0;
  if (plan.empty() && listed) co_return result;  // only the manifest travelled

  std::string blob;
  for (const auto& path : plan.remove) {
    blob += path;
    blob.push_back('\0');
  }
  const std::size_t removals = blob.size();
  std::string archive = pack_local_tree(source_root, source, plan.send);
  result.compressed = compresses_well(archive);
  if (result.compressed) archive = gzip_compress(archive);
  blob += archive;
  archive.clear();
  result.archive_bytes = blob.size();
  const std::string digest = sha256_hex(blob);

  // Which files a number of archive bytes has carried, for the progress: in proportion.
  TreeProgress progress;
  progress.bytes_total = blob.size();
  progress.files_total = result.files_sent;
  const auto on_chunk = [&](std::uint64_t sent) {
    progress.bytes_done = sent;
    progress.files_done = blob.empty() ? progress.files_total : progress.files_total * sent / blob.size();
    report(options, progress);
  };
  std::exception_ptr failure;
  try {
    co_await job.send("blob", blob, on_chunk);
    std::vector<std::string> args{arg(job.path()), arg(destination)};
    const auto applied =
        co_await job.script(apply_script(blob.size(), digest, removals, result.compressed), std::move(args), false, {});
    if (applied.exit_code == kDamaged) throw workspace::WorkspaceError("the tree archive arrived damaged on the VM");
    if (applied.exit_code != 0) throw_step("applying the tree to", destination, applied.exit_code);
  } catch (...) {
    failure = std::current_exception();
  }
  if (failure) {
    EXEDEV_AWAIT_DESPITE_CANCELLATION(cleanup_error, job.remove());
    std::rethrow_exception(failure);
  }
  co_return result;
}

Task<TreeTransferResult> SandboxBackend::download_tree(std::string remote_dir, std::string local_dir,
                                                       TreeTransferOptions options) {
  const std::string source_dir = co_await remote_path(*this, std::move(remote_dir));
  const std::filesystem::path destination = std::filesystem::absolute(local_dir).lexically_normal();
  const TreeFilter filter(options.excludes);
  TreeTransferResult result;

  TreeJob job(*this, job_path(source_dir));
  auto listed = co_await job.list(source_dir, filter.prunable_names());
  if (!listed) {
    throw std::filesystem::filesystem_error("cannot download the tree", source_dir,
                                            std::make_error_code(std::errc::no_such_file_or_directory));
  }
  TreeManifest source = std::move(listed->manifest);
  result.refused = std::move(listed->others);
  // The VM's modes: permission bits only, never set-id or sticky (the host may run as root).
  restrict_modes(source, options.keep_remote_mode_bits ? 0777 : 0777 & ~process_umask());
  apply_filter(source, filter);
  for (auto& path : drop_escaping_symlinks(source)) result.refused.push_back(std::move(path));
  count_tree(source, result);
  std::vector<std::string> ignored;
  const TreeManifest present = list_local_tree(destination, filter, ignored);
  const TreePlan plan = plan_tree(source, present);
  result.entries_removed = plan.remove.size();
  for (const auto& path : plan.send) result.files_sent += source.at(path).type == TreeEntryType::file ? 1 : 0;
  if (plan.empty() && std::filesystem::is_directory(destination)) co_return result;

  // The archive is extracted into a copy of the destination as it arrives, and the copy moved
  // into place once all of it has arrived and checked: memory does not grow with the tree.
  TreeStage stage(destination, plan.remove, source);
  if (!plan.send.empty()) {
    std::string list;
    for (const auto& path : plan.send) {
      list += path;
      list.push_back('\0');
    }
    const bool list_gzip = compresses_well(list);
    if (list_gzip) list = gzip_compress(list);
    TreeProgress progress;
    progress.files_total = result.files_sent;
    std::exception_ptr failure;
    try {
      co_await job.send("list", std::move(list), {});
      const std::string answer = co_await job.archive(source_dir, list_gzip, options.archive_timeout);
      std::uint64_t tar_size = 0;
      std::uint64_t size = 0;
      char kind[4] = {};
      char digest[65] = {};
      if (std::sscanf(answer.c_str(), "%lu %lu %3s %64s", &tar_size, &size, kind, digest) != 4) {
        throw workspace::WorkspaceError("the VM's answer about the tree archive is malformed");
      }
      // Sizes the VM reports: checked before anything is fetched or unpacked, never allocated.
      if (std::max(tar_size, size) > options.max_download_bytes) {
        throw workspace::WorkspaceLimitError(fmt::format("the archive of the tree \"{}\" ({} bytes)", source_dir,
                                                         std::max(tar_size, size)),
                                             options.max_download_bytes, "TreeTransferOptions::max_download_bytes");
      }
      result.archive_bytes = size;
      result.compressed = std::string_view(kind) == "gz";
      progress.bytes_total = size;
      TarStream tar(stage);
      std::unique_ptr<GzipInflater> inflater;
      if (result.compressed) {
        inflater = std::make_unique<GzipInflater>(size, tar_size, [&tar](std::string_view piece) { tar.feed(piece); });
      }
      detail::Sha256 hash;
      const auto on_page = [&](std::string_view page) {
        hash.update(page);
        if (!inflater) {
          tar.feed(page);
        } else if (!inflater->feed(page)) {
          throw workspace::WorkspaceError("the tree archive arrived damaged from the VM");
        }
        progress.bytes_done += page.size();
        progress.files_done = size == 0 ? progress.files_total : progress.files_total * progress.bytes_done / size;
        report(options, progress);
      };
      co_await job.fetch(size, on_page);
      if (hash.finish_hex() != digest || (inflater && !inflater->finish())) {
        throw workspace::WorkspaceError("the tree archive arrived damaged from the VM");
      }
      tar.finish();
    } catch (...) {
      failure = std::current_exception();
    }
    EXEDEV_AWAIT_DESPITE_CANCELLATION(cleanup_error, job.remove());
    if (failure) std::rethrow_exception(failure);
  }
  stage.commit();
  co_return result;
}

}  // namespace exedev
