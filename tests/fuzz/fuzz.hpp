#pragma once
// Shared by the fuzz targets: the libFuzzer entry point they define, and a check that aborts
// (so both libFuzzer and the corpus driver report it) when a property fails.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace exedev::fuzz {

inline void require(bool property, const char* what) {
  if (!property) {
    std::fprintf(stderr, "fuzz property failed: %s\n", what);
    std::abort();
  }
}

inline std::string_view bytes(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace exedev::fuzz
