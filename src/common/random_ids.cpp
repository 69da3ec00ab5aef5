#include "common/random_ids.hpp"

#include <algorithm>
#include <array>
#include <functional>

namespace exedev::detail {

std::mt19937_64& random_engine() {
  thread_local std::mt19937_64 engine{[] {
    std::random_device device;
    std::array<std::random_device::result_type, 8> seed{};
    std::generate(seed.begin(), seed.end(), std::ref(device));
    std::seed_seq sequence(seed.begin(), seed.end());
    return std::mt19937_64(sequence);
  }()};
  return engine;
}

namespace {

template <typename Generator>
std::string chars_from(Generator& generator, std::string_view alphabet, std::size_t count) {
  std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
  std::string out;
  out.reserve(count);
  for (std::size_t i = 0; i < count; ++i) out += alphabet[pick(generator)];
  return out;
}

constexpr std::string_view hex_digits = "0123456789abcdef";

}  // namespace

std::string random_chars(std::string_view alphabet, std::size_t count) {
  return chars_from(random_engine(), alphabet, count);
}

std::string random_hex(std::size_t bytes) { return random_chars(hex_digits, 2 * bytes); }

std::string secret_hex(std::size_t bytes) {
  std::random_device device;
  return chars_from(device, hex_digits, 2 * bytes);
}

}  // namespace exedev::detail
