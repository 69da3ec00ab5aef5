#!/usr/bin/env bash
# Reproduces ADR 7's table: what GCC 12 and Clang do with temporaries inside a co_await
# expression. Each case is a tiny program (a minimal task type, no Asio) built with
# -fsanitize=address,undefined and run; the verdict is "refused" (does not compile), "corrupts"
# (a sanitizer report at run time) or "correct".
#   scripts/gcc12-coawait-probe.sh [compiler...]   (default: g++ clang++)
set -uo pipefail
cd "$(dirname "$0")/.."
compilers=("$@")
[[ ${#compilers[@]} -gt 0 ]] || compilers=(g++ clang++)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat > "$work/probe.cpp" <<'EOF'
#include <coroutine>
#include <cstdio>
#include <exception>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <exedev/coawait_guard.hpp>
#include <exedev/string_list.hpp>

// The smallest lazy task: enough for GCC 12's bug, which is in the caller's coroutine.
template <class T> struct Task {
  struct promise_type {
    T value{};
    std::coroutine_handle<> continuation;
    Task get_return_object() { return Task{std::coroutine_handle<promise_type>::from_promise(*this)}; }
    std::suspend_always initial_suspend() noexcept { return {}; }
    struct Final {
      bool await_ready() noexcept { return false; }
      std::coroutine_handle<> await_suspend(std::coroutine_handle<promise_type> h) noexcept {
        auto next = h.promise().continuation;
        return next ? next : std::noop_coroutine();
      }
      void await_resume() noexcept {}
    };
    Final final_suspend() noexcept { return {}; }
    void return_value(T v) { value = std::move(v); }
    void unhandled_exception() { std::terminate(); }
  };
  std::coroutine_handle<promise_type> handle;
  explicit Task(std::coroutine_handle<promise_type> h) : handle(h) {}
  Task(Task&& other) noexcept : handle(std::exchange(other.handle, {})) {}
  ~Task() { if (handle) handle.destroy(); }
  bool await_ready() { return false; }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> c) { handle.promise().continuation = c; return handle; }
  T await_resume() { return std::move(handle.promise().value); }
};

const std::string kLong(48, 'x');  // past the small-string buffer: a double destruction frees twice

struct Owning { std::string name{}; int x{}; };
struct Trivial { std::string_view name{}; int x{}; };
struct WithCtor { std::string name; explicit WithCtor(std::string n) : name(std::move(n)) {} };
struct Guarded { std::string name{}; int x{}; EXEDEV_COAWAIT_GUARD; };

Task<int> by_value(Owning o) { co_return static_cast<int>(o.name.size()); }
Task<int> by_cref(const Owning& o) { co_return static_cast<int>(o.name.size()); }
Task<int> wrapper(Owning o) { return by_value(std::move(o)); }  // not a coroutine
Task<int> defaulted(Owning o = {}) { co_return static_cast<int>(o.name.size()); }
Task<int> number(std::size_t n) { co_return static_cast<int>(n); }
Task<int> trivial(Trivial t) { co_return static_cast<int>(t.name.size()); }
Task<int> with_ctor(WithCtor w) { co_return static_cast<int>(w.name.size()); }
Task<int> string(std::string s) { co_return static_cast<int>(s.size()); }
Task<int> list(std::initializer_list<std::string_view> l) { co_return static_cast<int>(l.size()); }
Task<int> vector(std::vector<std::string> v) { co_return static_cast<int>(v.size()); }
Task<int> string_list(exedev::StringList l) { co_return static_cast<int>(l.size()); }
Task<int> guarded(Guarded g) { co_return static_cast<int>(g.name.size()); }
Task<int> callback(std::function<std::size_t()> f) { co_return static_cast<int>(f()); }
Owning make_owning() { return Owning{.name = kLong}; }

Task<int> caller() {
  int n = 0;
#if CASE == 1
  n = co_await by_value(Owning{.name = kLong});
#elif CASE == 2
  n = co_await by_cref(Owning{.name = kLong});
#elif CASE == 3
  n = co_await by_value({.name = kLong});
#elif CASE == 4
  n = co_await wrapper(Owning{.name = kLong});
#elif CASE == 5
  n = co_await number(Owning{.name = kLong}.name.size());
#elif CASE == 6
  n = co_await by_value(Owning{.x = 3});
#elif CASE == 7
  n = co_await defaulted();
#elif CASE == 8
  n = co_await trivial(Trivial{.name = kLong});
#elif CASE == 9
  n = co_await with_ctor(WithCtor{kLong});
#elif CASE == 10
  n = co_await string(std::string(kLong));
#elif CASE == 11
  n = co_await by_value(make_owning());
#elif CASE == 12
  n = co_await list({"a", "b"});
#elif CASE == 13
  n = co_await vector({"a", "b"});
#elif CASE == 14
  n = co_await callback([copy = kLong] { return copy.size(); });
#elif CASE == 15
  n = co_await callback([&] { return kLong.size(); });
#elif CASE == 16
  n = co_await guarded({.name = kLong});
#elif CASE == 17
  Guarded named{.name = kLong};
  n = co_await guarded(named);
#elif CASE == 18
  n = co_await string_list({"make", std::string(kLong), "test"});
#endif
  co_return n;
}

int main() {
  auto task = caller();
  task.handle.resume();
  std::printf("%d\n", task.handle.promise().value);
}
EOF

cases=(
  "aggregate with an owning member, by value: f(Owning{.name = s})"
  "aggregate with an owning member, by const&: f(Owning{.name = s})"
  "aggregate, braced argument: f({.name = s})"
  "aggregate through a non-coroutine wrapper"
  "aggregate's member read: f(Owning{.name = s}.name.size())"
  "aggregate, only a trivial member given: f(Owning{.x = 3})"
  "defaulted aggregate argument: f() with Owning o = {}"
  "aggregate of trivially destructible members"
  "class with a constructor: f(WithCtor{s})"
  "std::string temporary: f(std::string(s))"
  "aggregate returned by a function: f(make())"
  "initializer_list argument: f({\"a\", \"b\"})"
  "vector argument from a braced list: f({\"a\", \"b\"})"
  "lambda capturing a string by value"
  "lambda capturing by reference"
  "guarded aggregate (EXEDEV_COAWAIT_GUARD), braced: f({.name = s})"
  "guarded aggregate, named first"
  "exedev::StringList from a braced list"
)
printf '%-70s' "case"
for cxx in "${compilers[@]}"; do printf ' %-10s' "$cxx"; done
printf '\n'
for i in "${!cases[@]}"; do
  n=$((i + 1))
  printf '%-70s' "$n. ${cases[$i]}"
  for cxx in "${compilers[@]}"; do
    exe="$work/case$n-${cxx//+/p}"
    if ! "$cxx" -std=c++20 -Iinclude -DCASE=$n -fsanitize=address,undefined -fno-sanitize-recover=all -g \
         "$work/probe.cpp" -o "$exe" 2>/dev/null; then
      verdict=refused
    elif ASAN_OPTIONS=detect_leaks=0 "$exe" >/dev/null 2>&1; then
      verdict=correct
    else
      verdict=corrupts
    fi
    printf ' %-10s' "$verdict"
  done
  printf '\n'
done
