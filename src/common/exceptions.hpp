#pragma once
// Captured exceptions (std::exception_ptr): looking inside one, so that callers check a
// failure's type and code like any value (ADR 8), and nesting one in a new error. Both need a
// rethrow, as C++ offers no other way; it is written here once, not at every call site.
// Internal: header-only, standard library only, never installed.

#include <exception>
#include <utility>

namespace exedev::detail {

/// The exception `error` holds, as an `E` (a base class or the exact type), or nullptr when it
/// holds none (or another type). The pointer refers to the object `error` owns: it is valid as
/// long as `error` (or a copy of it) lives.
template <typename E>
[[nodiscard]] const E* exception_as(const std::exception_ptr& error) noexcept {
  if (!error) return nullptr;
  // C++ has no other way to look into an exception_ptr: rethrow it and let a handler match its
  // type. The standard lets rethrow_exception throw a copy; the Itanium C++ ABI's runtimes
  // (libstdc++'s and libc++'s, the ones this library builds with) throw the very object `error`
  // refers to, so the address stays valid after the handler ends.
  try {
    std::rethrow_exception(error);
  } catch (const E& e) {
    return &e;
  } catch (...) {
    return nullptr;
  }
}

/// Throws `error` with `cause` nested.
[[noreturn]] void throw_nested(std::exception_ptr cause, auto&& error) {
  // std::throw_with_nested nests the exception being handled: `cause` must be rethrown and
  // caught to become that one (C++ has no way to nest an exception_ptr directly).
  try {
    std::rethrow_exception(std::move(cause));
  } catch (...) {
    std::throw_with_nested(std::forward<decltype(error)>(error));
  }
}

}  // namespace exedev::detail
