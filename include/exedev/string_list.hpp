#pragma once
// StringList: the type of every list-of-strings argument.
//
// A braced list written inside a `co_await` expression, `co_await client.list_vms({"agents"})`,
// would make a std::initializer_list, which GCC 12 cannot compile there ("array used as
// initializer"). StringList has no initializer-list constructor: `{"a", "b"}` reaches its
// variadic constructor instead, and the call compiles and runs with GCC 12 and Clang alike. It
// owns its strings, so a call may be awaited later.

#include <concepts>
#include <string>
#include <utility>
#include <vector>

namespace exedev {

class StringList {
 public:
  StringList() = default;
  /// Takes a vector's strings (copy it, or move it in).
  StringList(std::vector<std::string> items) : items_(std::move(items)) {}  // NOLINT: implicit by design
  /// One string per argument: `{"make", "test"}`, `{vm.name}`, or a single `"tag"`.
  template <typename... Strings>
    requires(sizeof...(Strings) > 0 && (std::constructible_from<std::string, const Strings&> && ...))
  StringList(const Strings&... items) {  // NOLINT: implicit by design
    items_.reserve(sizeof...(Strings));
    (items_.emplace_back(items), ...);
  }

  [[nodiscard]] const std::vector<std::string>& items() const& noexcept { return items_; }
  [[nodiscard]] std::vector<std::string> items() && noexcept { return std::move(items_); }
  [[nodiscard]] bool empty() const noexcept { return items_.empty(); }
  [[nodiscard]] std::size_t size() const noexcept { return items_.size(); }
  [[nodiscard]] auto begin() const noexcept { return items_.begin(); }
  [[nodiscard]] auto end() const noexcept { return items_.end(); }

 private:
  std::vector<std::string> items_;
};

}  // namespace exedev
