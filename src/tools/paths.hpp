#pragma once
// Workspace path text as the reference's posixpath and fnmatch handle it.

#include <string>
#include <string_view>
#include <vector>

namespace exedev::tools::detail {

/// Whether the normalized absolute `path` is `root` or below it, compared as text.
[[nodiscard]] bool path_contains(const std::string& root, const std::string& path);
/// posixpath.relpath(path, start) for normalized absolute paths.
[[nodiscard]] std::string relative_path(const std::string& path, const std::string& start);
/// posixpath.dirname / basename.
[[nodiscard]] std::string parent_path(const std::string& path);
[[nodiscard]] std::string base_name(const std::string& path);
/// posixpath.join(a, b) for a relative b.
[[nodiscard]] std::string join_path(const std::string& a, const std::string& b);
/// Path components ("a/b" -> {"a", "b"}).
[[nodiscard]] std::vector<std::string> split_components(std::string_view path);

/// fnmatch.fnmatch on POSIX: `*` also spans `/`, `?` one byte, `[...]`, `[!...]`; backslash
/// is literal. (Case-sensitive, as on POSIX.)
[[nodiscard]] bool fnmatch_python(const std::string& name, const std::string& pattern);
/// A relative path against a policy pattern; a leading `**/` also matches at the top.
[[nodiscard]] bool pattern_matches(const std::string& path, const std::string& pattern);
/// The first of `patterns` that matches `path` (or, with `ancestors`, one of its ancestors);
/// empty when none does.
[[nodiscard]] std::string first_matching_pattern(const std::string& path, const std::vector<std::string>& patterns,
                                                 bool ancestors);

/// Whether a root-relative path has a dot-prefixed component.
[[nodiscard]] bool is_hidden(const std::string& relative);
/// Whether a glob names a dot-prefixed component explicitly.
[[nodiscard]] bool names_hidden(const std::string& pattern);

/// Glob components as Path.glob matches them: `*`, `?` and `[...]` stay within one component,
/// `**` matches zero or more whole components.
[[nodiscard]] bool glob_match(const std::vector<std::string>& pattern, const std::vector<std::string>& path);

}  // namespace exedev::tools::detail
