#pragma once
// Random names for temporary files, boundaries, records and emulated ids, and secrets. Names
// come from a per-thread generator (fast, never repeating in practice, not a CSPRNG); secrets
// come from the operating system's generator. Internal, sans-IO.

#include <cstddef>
#include <random>
#include <string>
#include <string_view>

namespace exedev::detail {

/// This thread's generator, seeded once from std::random_device (256 bits).
[[nodiscard]] std::mt19937_64& random_engine();

/// `count` characters drawn uniformly from `alphabet` (not empty).
[[nodiscard]] std::string random_chars(std::string_view alphabet, std::size_t count);

/// `bytes` random bytes as lowercase hex (2 × bytes digits), from random_engine().
[[nodiscard]] std::string random_hex(std::size_t bytes);

/// The same from std::random_device, for a secret that guards something.
[[nodiscard]] std::string secret_hex(std::size_t bytes);

}  // namespace exedev::detail
