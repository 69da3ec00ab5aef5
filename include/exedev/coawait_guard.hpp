#pragma once
// CoAwaitGuard: makes GCC 12 refuse, at compile time, the code it would miscompile.
//
// GCC 12 (Debian 12's 12.2) destroys a temporary aggregate twice when it appears inside a
// `co_await` expression and has a member with a non-trivial destructor:
// `co_await client.new_vm({.name = "x"})` compiles, then frees memory twice at run time. It also
// refuses to compile any std::initializer_list inside a `co_await` expression ("array used as
// initializer", reported at the coroutine's closing brace). Every options struct of this library
// that owns strings, lists or callbacks ends with a CoAwaitGuard member whose default
// initializer is a braced list, so the first pattern meets the second: GCC 12 stops with that
// error instead of producing a program that corrupts its heap. Named options are unaffected
// (`NewVMOptions options{.name = "x"}; co_await client.new_vm(options);`), and so is Clang,
// which compiles the inline form correctly. docs/adr/0007 records the measurements.

#include <initializer_list>

namespace exedev {

/// An empty tag, not an option: never set it. See the header comment.
struct CoAwaitGuard {
  constexpr CoAwaitGuard() noexcept = default;
  constexpr CoAwaitGuard(std::initializer_list<bool>) noexcept {}
  friend constexpr bool operator==(CoAwaitGuard, CoAwaitGuard) noexcept { return true; }
};

}  // namespace exedev

/// The last member of an options struct that owns strings, lists or callbacks. It takes no
/// space; its braced default initializer is what GCC 12 cannot carry across a `co_await`.
#define EXEDEV_COAWAIT_GUARD [[no_unique_address]] ::exedev::CoAwaitGuard coawait_guard = {true}
