// FileSystem's tools that change files: write_file, edit_file (each checked against the
// content hash the model saw, when hashes are on) and create_directory.
#include "tools/content_hash.hpp"
#include "tools/file_system_impl.hpp"
#include "tools/outcome.hpp"
#include "tools/paths.hpp"
#include "tools/text.hpp"
#include "workspace/shell_filesystem.hpp"  // posix_dirname

#include <exedev/workspace/workspace.hpp>

#include <filesystem>

namespace exedev::tools {

using detail::ModelRetry;

namespace {

[[noreturn]] void conflict(const std::string& path, const std::string& current, const std::string& expected) {
  throw ModelRetry("Conflict: file " + detail::python_repr(path) + " has changed (expected hash:" + expected +
                   ", got hash:" + current + "). Re-read the file and retry.");
}

// edit_file's checks of the file's text and its replacements, in order; the edited text.
std::string edited(const std::string& path, std::string text,
                   const std::vector<std::pair<std::string, std::string>>& replacements,
                   const std::optional<std::string>& expected_hash) {
  if (detail::looks_binary(text)) throw ModelRetry(path + " is a binary file; edit_file only edits text files.");
  // Strict: the whole file is written back, so undecodable bytes are refused, not replaced.
  if (auto why = detail::utf8_decode_error(text)) throw ModelRetry(*why);
  const std::string current = detail::content_hash(text);
  if (expected_hash && current != *expected_hash) conflict(path, current, *expected_hash);
  for (std::size_t i = 0; i < replacements.size(); ++i) {
    const auto& [old_text, new_text] = replacements[i];
    const std::string label = replacements.size() > 1 ? "replacement " + std::to_string(i + 1) : "old_text";
    if (old_text.empty()) throw ModelRetry(label + " is empty; old_text must be the exact text to replace.");
    const std::size_t count = detail::count_occurrences(text, old_text);
    if (count == 0) throw ModelRetry(label + " not found in " + path + ". No changes were written.");
    if (count > 1) {
      throw ModelRetry(label + " found " + std::to_string(count) + " times in " + path +
                       ". Include more surrounding context to make the match unique. No changes were written.");
    }
    text.replace(text.find(old_text), old_text.size(), new_text);
  }
  return text;
}

// Whether a confined write can check `expected_hash` as write_file does (a content hash is 12
// hex digits; any other text never matches, which the separate operations report).
bool confined_checkable(const std::optional<std::string>& expected_hash) {
  return !expected_hash || (expected_hash->size() == 12 &&
                            expected_hash->find_first_not_of("0123456789abcdef") == std::string::npos);
}

}  // namespace

Task<std::string> FileSystem::State::write_file(std::string path, std::string content,
                                                std::optional<std::string> expected_hash) {
  bool written = false;
  // One confined write (checks, hash and write); what it declines, the separate operations do.
  auto target = co_await confined_target(path, true, true);
  if (target && confined_checkable(expected_hash)) {
    const auto guard = co_await locks.acquire(target->path);
    detail::ConfinedCall call;
    call.kind = detail::ConfinedCall::Kind::write;
    call.data = content;
    call.expected_sha256 = expected_hash.value_or("");
    const std::string resolved = target->path;
    const auto done = co_await run_confined(path, std::move(*target), true, true, std::move(call));
    written = done.has_value();
    if (written) known.remember(resolved, content);
  }
  if (!written) {
    const auto b = co_await scope();
    const std::string resolved = co_await safe_resolve(path, true, true);
    const auto guard = co_await locks.acquire(resolved);
    const auto entry = co_await stat_or_none(resolved);
    if (entry && entry->is_dir) throw ModelRetry("Path " + detail::python_repr(path) + " exists and is not a regular file.");
    const std::string parent = workspace::detail::posix_dirname(resolved);
    const std::string not_directory = "Path " + detail::python_repr(path) + " has a parent that is not a directory.";
    workspace::FileEntry parent_entry;
    try {
      parent_entry = co_await ws->stat(parent);
    } catch (const std::filesystem::filesystem_error& error) {
      if (error.code() == std::errc::no_such_file_or_directory) {
        throw ModelRetry("Parent directory '" + detail::relative_path(parent, b.root) +
                         "' does not exist. Create the parent directory first.");
      }
      if (error.code() == std::errc::not_a_directory) throw ModelRetry(not_directory);
      throw;
    }
    if (!parent_entry.is_dir) throw ModelRetry(not_directory);
    // expected_hash guards an existing file only; a missing one is simply created.
    if (entry && expected_hash) {
      try {
        const auto current = detail::content_hash(co_await ws->read_bytes(resolved));
        if (current != *expected_hash) conflict(path, current, *expected_hash);
      } catch (const std::filesystem::filesystem_error& error) {
        if (error.code() != std::errc::no_such_file_or_directory) throw;
      }
    }
    co_await ws->write_bytes(resolved, content);
  }
  const std::size_t lines = detail::split_lines(content, false).size();
  co_return "Wrote " + std::to_string(detail::utf8_length(content)) + " chars (" + std::to_string(lines) + " lines) to " +
      path + "." + hash_suffix(detail::content_hash(content));
}

Task<std::string> FileSystem::State::edit_file(std::string path,
                                               std::vector<std::pair<std::string, std::string>> replacements,
                                               std::optional<std::string> expected_hash) {
  const std::string file_not_found = "File not found: " + path;
  // One confined splice when the tool set knows the file's content and the edit applies to it
  // (the workspace applies it only while the file holds that content, else answers with the
  // content it holds), or a confined read; then a confined write that replaces only the content
  // read. What any of them declines, the separate operations do from the start.
  auto target = co_await confined_target(path, true, true);
  if (target) {
    const auto guard = co_await locks.acquire(target->path);
    std::optional<workspace::ConfinedResult> found;
    if (const auto* seen = known.find(target->path)) {
      std::optional<std::string> text;
      try {
        text = edited(path, *seen, replacements, expected_hash);
      } catch (const ModelRetry&) {
        // Said of content the file may no longer hold: the file as it is decides.
      }
      if (text) {
        detail::ConfinedCall splicing;
        splicing.kind = detail::ConfinedCall::Kind::splice;
        splicing.splice = detail::splice_between(*seen, *text);
        found = co_await run_confined(path, *target, true, true, std::move(splicing));
        if (found && found->spliced) {
          known.remember(target->path, *text);
          co_return "Edited " + path + "." + hash_suffix(detail::content_hash(*text));
        }
        if (!found) known.forget(target->path);  // declined: not worth a second try
      }
    }
    if (!found) {
      detail::ConfinedCall reading;
      reading.what.content = true;
      found = co_await run_confined(path, *target, true, true, std::move(reading));
    }
    if (found && (!found->entry || found->entry->is_dir)) throw ModelRetry(file_not_found);
    if (found && found->content) {
      std::string text = edited(path, *found->content, replacements, expected_hash);
      if (target->checked_real) target->checked_real = found->real;
      detail::ConfinedCall writing;
      writing.kind = detail::ConfinedCall::Kind::write;
      writing.data = text;
      writing.expected_sha256 = detail::sha256_hex(*found->content);
      const std::string resolved = target->path;
      const auto done = co_await run_confined(path, std::move(*target), true, true, std::move(writing));
      if (done) {
        known.remember(resolved, text);
        co_return "Edited " + path + "." + hash_suffix(detail::content_hash(text));
      }
    }
  }
  const std::string resolved = co_await safe_resolve(path, true, true);
  std::string text;
  {
    const auto guard = co_await locks.acquire(resolved);
    const auto entry = co_await stat_or_none(resolved);
    if (!entry || entry->is_dir) throw ModelRetry(file_not_found);
    auto current = co_await ws->read_bytes(resolved);
    text = edited(path, std::move(current), replacements, expected_hash);
    co_await ws->write_bytes(resolved, text);
  }
  co_return "Edited " + path + "." + hash_suffix(detail::content_hash(text));
}

Task<std::string> FileSystem::State::create_directory(std::string path) {
  const std::string done = "Created directory: " + path;
  auto target = co_await confined_target(path, true, true);
  if (target) {
    detail::ConfinedCall call;
    call.kind = detail::ConfinedCall::Kind::make_dir;
    const auto made = co_await run_confined(path, std::move(*target), true, true, std::move(call));
    if (made) co_return done;
  }
  const std::string resolved = co_await safe_resolve(path, true, true);
  const std::string exists = "Path " + detail::python_repr(path) + " exists and is not a directory.";
  const std::string bad_parent = "Path " + detail::python_repr(path) + " has a parent that is not a directory.";
  if (const auto entry = co_await stat_or_none(resolved)) {
    if (entry->is_dir) co_return done;
    throw ModelRetry(exists);
  }
  // The nearest existing ancestor must be a directory.
  for (std::string current = workspace::detail::posix_dirname(resolved);;) {
    try {
      const auto parent = co_await ws->stat(current);
      if (!parent.is_dir) throw ModelRetry(bad_parent);
      break;
    } catch (const std::filesystem::filesystem_error& error) {
      if (error.code() == std::errc::not_a_directory) throw ModelRetry(bad_parent);
      if (error.code() != std::errc::no_such_file_or_directory) throw;
    }
    const std::string parent = workspace::detail::posix_dirname(current);
    if (parent == current) break;
    current = parent;
  }
  try {
    co_await ws->make_dir(resolved);
  } catch (const std::filesystem::filesystem_error& error) {
    if (error.code() == std::errc::file_exists) throw ModelRetry(exists);
    if (error.code() == std::errc::not_a_directory) throw ModelRetry(bad_parent);
    throw;
  }
  co_return done;
}

}  // namespace exedev::tools
