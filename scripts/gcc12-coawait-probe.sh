#!/usr/bin/env bash
# Reproduces ADR 7's table: what GCC 12 and Clang do with temporaries inside a co_await
# expression and with a co_await in an if or while condition. Each case is a tiny program (a
# minimal task type, no Asio) built with -fsanitize=address,undefined and run; the verdict is
# "refused" (does not compile), "corrupts" (a sanitizer report or a crash at run time) or
# "correct". The cases build in parallel (one per core).
#   scripts/gcc12-coawait-probe.sh [compiler...]      (default: g++ clang++) prints the table
#   scripts/gcc12-coawait-probe.sh --check [g++-12]   CTest gcc12_coawait_probe: fails when GCC 12
#       does not do what ADR 7's table says (the expected column below), so the rule README
#       "Compilers" states stays measured; skipped (77) when the compiler is not GCC 12.
set -uo pipefail
cd "$(dirname "$0")/.."
check=false
if [[ ${1:-} == --check ]]; then
  check=true
  shift
  compilers=("${1:-g++}")
  [[ $("${compilers[0]}" -dumpversion 2>/dev/null) == 12* ]] || { echo "not GCC 12: skipped"; exit 77; }
else
  compilers=("$@")
fi
[[ ${#compilers[@]} -gt 0 ]] || compilers=(g++ clang++)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat > "$work/probe.cpp" <<'EOF'
#include <coroutine>
#include <cstdio>
#include <exception>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <exedev/coawait_guard.hpp>
#include <exedev/string_list.hpp>

// The smallest lazy task: enough for GCC 12's bug, which is in the caller's coroutine.
template <class T> struct Result {
  T value{};
  void return_value(T v) { value = std::move(v); }
  T take() { return std::move(value); }
};
template <> struct Result<void> {
  void return_void() {}
  void take() {}
};
template <class T> struct Task {
  struct promise_type : Result<T> {
    std::exception_ptr error;
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
    void unhandled_exception() { error = std::current_exception(); }  // rethrown to the awaiter
  };
  std::coroutine_handle<promise_type> handle;
  explicit Task(std::coroutine_handle<promise_type> h) : handle(h) {}
  Task(Task&& other) noexcept : handle(std::exchange(other.handle, {})) {}
  ~Task() { if (handle) handle.destroy(); }
  bool await_ready() { return false; }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> c) { handle.promise().continuation = c; return handle; }
  T await_resume() {
    if (handle.promise().error) std::rethrow_exception(handle.promise().error);
    return handle.promise().take();
  }
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
std::string make_string() { return kLong; }

// Callees that throw (the caller catches): GCC 12 is said to destroy the temporaries of the
// co_await full-expression twice when the awaited coroutine throws.
Task<int> throws_string(std::string s) { if (!s.empty()) throw std::runtime_error(s); co_return 0; }
Task<int> throws_cref(const std::string& s) { if (!s.empty()) throw std::runtime_error(s); co_return 0; }
Task<int> throws_owning(Owning o) { if (!o.name.empty()) throw std::runtime_error(o.name); co_return 0; }
Task<int> throws_with_ctor(WithCtor w) { if (!w.name.empty()) throw std::runtime_error(w.name); co_return 0; }
Task<int> throws_callback(std::function<std::size_t()> f) { if (f() > 0) throw std::runtime_error("f"); co_return 0; }
Task<int> throws_two(std::string a, std::string b) { if (!a.empty()) throw std::runtime_error(a + b); co_return 0; }
Task<int> throws_later(std::string s) {
  co_await number(s.size());  // suspends first: the throw comes after a resumption
  throw std::runtime_error(s);
}
int caught(const std::exception& e) { return static_cast<int>(std::string(e.what()).size()); }

// A class with an implicit constructor, reached by a braced argument.
struct Implicit { std::string name; Implicit(std::string n) : name(std::move(n)) {} };  // NOLINT
Task<int> implicit(Implicit i) { co_return static_cast<int>(i.name.size()); }

// An options struct like the library's: optional, list, callback members, and one default that
// owns memory (empty members would hide a double destruction: it frees nothing).
struct Options {
  std::string label = std::string(48, 'y');
  std::optional<std::string> dir{};
  std::vector<std::string> env{};
  std::function<void(std::string_view)> on_output{};
  int timeout = 0;
};
Task<int> with_options(std::string line, Options o) { co_return static_cast<int>(line.size() + o.env.size()); }

// A conditional's result: a class temporary when a branch is a copy of an lvalue or a prvalue.
bool chosen = true;
struct Handle { std::shared_ptr<int> count = std::make_shared<int>(1); };
std::optional<std::string> make_optional_string() { return kLong; }
Task<int> optional_string(std::optional<std::string> o) { co_return static_cast<int>(o ? o->size() : 0); }
Task<int> three(Handle h, std::string name, std::optional<std::string> tag) {
  co_return static_cast<int>(name.size() + (tag ? tag->size() : 0)) + *h.count;
}

// A statement that awaits a class and then throws, as the library's cancellation checks are
// written (`if (was_cancelled(co_await this_coro::cancellation_state)) throw_cancelled();`), in a
// coroutine that returns nothing and ends after it.
using VoidTask = Task<void>;
struct State { std::shared_ptr<int> slot = std::make_shared<int>(0); };  // like asio's cancellation_state
Task<State> current_state() { co_return State{}; }
bool was_cancelled(const State& state) { return *state.slot != 0; }
[[noreturn]] void throw_cancelled(std::exception_ptr cause = nullptr) {
  if (cause) std::rethrow_exception(cause);
  throw std::runtime_error("cancelled");
}
VoidTask check_in_one_statement() { if (was_cancelled(co_await current_state())) throw_cancelled(); }
VoidTask check_named_first() {
  const State state = co_await current_state();
  if (was_cancelled(state)) throw_cancelled();
}
VoidTask check_then_work() {
  if (was_cancelled(co_await current_state())) throw_cancelled();
  co_await number(kLong.size());
}
// co_await in an if or while condition, the branch more than a local's assignment.
int touched = 0;
Task<int> cond_return(int v) { if (co_await number(v) != 0) co_return 5; co_return 1; }
Task<int> cond_loop() { while (co_await number(0) != 0) { ++touched; } co_return 1; }
Task<int> cond_named_task() { auto t = number(0); if (co_await std::move(t) != 0) { ++touched; } else { --touched; } co_return 1; }
Task<int> cond_init_statement() { if (const int v = co_await number(0); v != 0) { ++touched; } else { --touched; } co_return 1; }
Task<int> cond_declaration() { if (auto v = co_await number(0)) { ++touched; } co_return 1; }

struct Pair { std::string first; std::string second; };
Task<Pair> pair_of(std::string s) { co_return Pair{s, s}; }

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
#elif CASE == 19
  try { n = co_await throws_string(std::string(kLong)); } catch (const std::exception& e) { n = caught(e); }
#elif CASE == 20
  try { n = co_await throws_string("echo " + kLong); } catch (const std::exception& e) { n = caught(e); }
#elif CASE == 21
  try { n = co_await throws_string(make_string()); } catch (const std::exception& e) { n = caught(e); }
#elif CASE == 22
  const std::string named = kLong;
  try { n = co_await throws_string(named); } catch (const std::exception& e) { n = caught(e); }
#elif CASE == 23
  try { n = co_await throws_cref(std::string(kLong)); } catch (const std::exception& e) { n = caught(e); }
#elif CASE == 24
  try { n = co_await throws_two(kLong, std::string(kLong) + "b"); } catch (const std::exception& e) { n = caught(e); }
#elif CASE == 25
  try { n = co_await throws_later(std::string(kLong)); } catch (const std::exception& e) { n = caught(e); }
#elif CASE == 26
  try { n = co_await throws_with_ctor(WithCtor{kLong}); } catch (const std::exception& e) { n = caught(e); }
#elif CASE == 27
  n = co_await throws_string(std::string(kLong));  // not caught: the caller's task carries it
#elif CASE == 28
  try {
    auto task = throws_string(std::string(kLong));
    n = co_await std::move(task);
  } catch (const std::exception& e) { n = caught(e); }
#elif CASE == 29
  try { n = co_await throws_owning(Owning{.name = kLong}); } catch (const std::exception& e) { n = caught(e); }
#elif CASE == 30
  try {
    auto task = throws_owning(Owning{.name = kLong});
    n = co_await std::move(task);
  } catch (const std::exception& e) { n = caught(e); }
#elif CASE == 31
  try { n = co_await throws_callback([copy = kLong] { return copy.size(); }); } catch (const std::exception& e) { n = caught(e); }
#elif CASE == 32
  auto task = by_value(Owning{.name = kLong});
  n = co_await std::move(task);
#elif CASE == 33
  auto [first, second] = co_await pair_of(kLong);
  n = static_cast<int>(first.size() + second.size());
#elif CASE == 34
  auto [first, second] = Pair{kLong, kLong};
  n = co_await string(first);
  n += static_cast<int>(second.size());
#elif CASE == 35
  const std::map<std::string, std::string> env{{"A", kLong}, {"B", kLong}};
  for (const auto& [key, value] : env) n += co_await string(key + value);
#elif CASE == 36
  n = co_await implicit({kLong});
#elif CASE == 37
  n = co_await string({});
#elif CASE == 38
  n = co_await with_options(kLong, Options{});
#elif CASE == 39
  n = co_await with_options(kLong, {});
#elif CASE == 40
  Options options;
  options.env.push_back(kLong);
  n = co_await with_options(kLong, options);
#elif CASE == 41
  n = co_await callback([size = kLong.size()] { return size; });
#elif CASE == 42
  auto call = [copy = kLong] { return copy.size(); };
  n = co_await callback(call);
#elif CASE == 43
  for (int round = 0; round < 3; ++round) {
    auto [first, second] = co_await pair_of(kLong + std::to_string(round));
    n += static_cast<int>(first.size() + second.size());
  }
#elif CASE == 44
  Owning named{.name = kLong};
  try { n = co_await throws_owning(std::move(named)); } catch (const std::exception& e) { n = caught(e); }
#elif CASE == 45
  Owning named{.name = kLong};
  n = co_await by_value(std::move(named));
#elif CASE == 46
  const std::string named = kLong;
  n = co_await string(chosen ? named : std::string());
#elif CASE == 47
  const std::string named = kLong;
  n = co_await string(chosen ? std::string(named) : std::string());
#elif CASE == 48
  const std::string named = kLong;
  n = co_await number((chosen ? named : std::string()).size());
#elif CASE == 49
  const std::string named = kLong;
  try { n = co_await throws_string(chosen ? named : std::string()); } catch (const std::exception& e) { n = caught(e); }
#elif CASE == 50
  const std::optional<std::string> named = kLong;
  Handle handle;
  n = co_await three(handle, kLong, chosen ? named : std::optional<std::string>());
#elif CASE == 51
  const std::string named = kLong;
  n = co_await string(chosen ? named : kLong);
#elif CASE == 52
  const std::optional<std::string> named = kLong;
  const std::optional<std::string> tag = chosen ? named : std::optional<std::string>();
  n = co_await optional_string(tag);
#elif CASE == 53
  const std::optional<std::string> named = kLong;
  auto task = optional_string(chosen ? named : std::optional<std::string>());
  n = co_await std::move(task);
#elif CASE == 54
  const std::optional<std::string> tag = kLong;
  Handle handle;
  n = co_await three(handle, *make_optional_string(), tag);
#elif CASE == 55
  co_await check_in_one_statement();
  n = 1;
#elif CASE == 56
  co_await check_named_first();
  n = 1;
#elif CASE == 57
  co_await check_then_work();
  n = 1;
#elif CASE == 58
  n = co_await cond_return(1);
#elif CASE == 59
  n = co_await cond_loop();
#elif CASE == 60
  n = co_await cond_named_task();
#elif CASE == 61
  n = co_await cond_init_statement();
#elif CASE == 62
  n = co_await cond_declaration();
#endif
  co_return n;
}

int main() {
  auto task = caller();
  task.handle.resume();
  if (task.handle.promise().error) {
    try { std::rethrow_exception(task.handle.promise().error); } catch (const std::exception& e) { std::printf("%zu\n", std::string(e.what()).size()); }
    return 0;
  }
  std::printf("%d\n", task.handle.promise().value);
}
EOF

# Each case: GCC 12's verdict as ADR 7's table records it (what --check expects), then its text.
cases=(
  "corrupts:aggregate with an owning member, by value: f(Owning{.name = s})"
  "corrupts:aggregate with an owning member, by const&: f(Owning{.name = s})"
  "corrupts:aggregate, braced argument: f({.name = s})"
  "corrupts:aggregate through a non-coroutine wrapper"
  "corrupts:aggregate's member read: f(Owning{.name = s}.name.size())"
  "corrupts:aggregate, only a trivial member given: f(Owning{.x = 3})"
  "corrupts:defaulted aggregate argument: f() with Owning o = {}"
  "correct:aggregate of trivially destructible members"
  "correct:class with a constructor: f(WithCtor{s})"
  "correct:std::string temporary: f(std::string(s))"
  "correct:aggregate returned by a function: f(make())"
  "refused:initializer_list argument: f({\"a\", \"b\"})"
  "refused:vector argument from a braced list: f({\"a\", \"b\"})"
  "corrupts:lambda capturing a string by value"
  "correct:lambda capturing by reference"
  "refused:guarded aggregate (EXEDEV_COAWAIT_GUARD), braced: f({.name = s})"
  "correct:guarded aggregate, named first"
  "correct:exedev::StringList from a braced list"
  "correct:callee throws: f(std::string(s)), caught"
  "correct:callee throws: f(\"echo \" + s), caught"
  "correct:callee throws: f(make_string()), caught"
  "correct:callee throws: f(named) by value, caught"
  "correct:callee throws: f(std::string(s)) by const&, caught"
  "correct:callee throws: two string temporaries, caught"
  "correct:callee throws after a suspension: f(std::string(s)), caught"
  "correct:callee throws: f(WithCtor{s}), caught"
  "correct:callee throws: f(std::string(s)), not caught by the caller"
  "correct:callee throws: named task, auto t = f(std::string(s)); co_await std::move(t)"
  "corrupts:callee throws: aggregate f(Owning{.name = s}), caught"
  "correct:callee throws: named task of an aggregate, auto t = f(Owning{...})"
  "corrupts:callee throws: lambda capturing a string by value, caught"
  "correct:named task of an aggregate, auto t = f(Owning{...}), returns"
  "correct:structured binding of a co_await result: auto [a, b] = co_await f()"
  "correct:structured binding alive across a co_await"
  "correct:structured bindings in a range-for with co_await in the body"
  "correct:braced argument to a class with a constructor: f({s})"
  "correct:empty braced argument to std::string: f({})"
  "corrupts:options struct temporary, empty: f(line, Options{})"
  "corrupts:options struct temporary, braced: f(line, {})"
  "correct:options struct named first: Options o; f(line, o)"
  "correct:lambda capturing a size_t by value"
  "correct:lambda capturing a string by value, named first"
  "correct:structured binding of a co_await result in a loop"
  "correct:callee throws: named aggregate moved in, f(std::move(o)), caught"
  "correct:named aggregate moved in, f(std::move(o))"
  "corrupts:conditional copying an lvalue: f(c ? named : std::string())"
  "corrupts:conditional of two prvalues: f(c ? std::string(named) : std::string())"
  "corrupts:conditional's member read: f((c ? named : std::string()).size())"
  "corrupts:callee throws: f(c ? named : std::string()), caught"
  "corrupts:conditional optional<string> among class arguments (provision.cpp's crash)"
  "correct:conditional of two lvalues: f(c ? named : other)"
  "correct:conditional named first: auto v = c ? named : T(); f(v)"
  "correct:named task of a conditional: auto t = f(c ? named : T()); co_await std::move(t)"
  "correct:class arguments: f(handle, *make_optional(), named_optional)"
  "corrupts:await then throw, a coroutine's one statement: if (f(co_await s())) throw_x();"
  "correct:await into a named value, then test and throw"
  "corrupts:await then throw, followed by another co_await"
  "corrupts:co_await in an if condition, co_return in the branch"
  "corrupts:co_await in a while condition"
  "correct:named task in an if condition: if (co_await std::move(t) != 0)"
  "correct:co_await in an if's init-statement: if (const int v = co_await f(); v)"
  "correct:co_await in an if's condition declaration: if (auto v = co_await f())"
)
# verdict N CXX: builds and runs case N with CXX, writes the verdict to $work/verdict-N-<CXX as a file name>.
verdict() {
  local n=$1 cxx=$2 exe="$work/case$1-${2//[^A-Za-z0-9]/_}" result
  if ! "$cxx" -std=c++20 -Iinclude -DCASE="$n" -fsanitize=address,undefined -fno-sanitize-recover=all -g \
       "$work/probe.cpp" -o "$exe" 2>/dev/null; then
    result=refused
  elif ASAN_OPTIONS=detect_leaks=0 "$exe" >/dev/null 2>&1; then
    result=correct
  else
    result=corrupts
  fi
  echo "$result" > "$work/verdict-$n-${cxx//[^A-Za-z0-9]/_}"
}
export -f verdict
export work
for i in "${!cases[@]}"; do
  for cxx in "${compilers[@]}"; do printf '%s %s\n' "$((i + 1))" "$cxx"; done
done | xargs -P "$(nproc)" -n 2 bash -c 'verdict "$0" "$1"'

failures=0
printf '%-84s' "case"
for cxx in "${compilers[@]}"; do printf ' %-10s' "$cxx"; done
$check && printf ' %-10s' "expected"
printf '\n'
for i in "${!cases[@]}"; do
  n=$((i + 1))
  expected=${cases[$i]%%:*}
  printf '%-84s' "$n. ${cases[$i]#*:}"
  for cxx in "${compilers[@]}"; do printf ' %-10s' "$(cat "$work/verdict-$n-${cxx//[^A-Za-z0-9]/_}")"; done
  if $check; then
    got=$(cat "$work/verdict-$n-${compilers[0]//[^A-Za-z0-9]/_}")
    printf ' %-10s' "$expected"
    [[ $got == "$expected" ]] || { printf ' MISMATCH'; failures=$((failures + 1)); }
  fi
  printf '\n'
done
if $check && ((failures > 0)); then
  echo "$failures case(s) differ from ADR 7's table: measure again and update the rule (README \"Compilers\", ADR 7)"
  exit 1
fi
