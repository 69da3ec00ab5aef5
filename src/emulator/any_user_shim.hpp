#pragma once
// The shared object the emulator's sshd is started with (LD_PRELOAD) so that it takes any login
// name as the emulator's user (any_user_shim.c). Built by CMake and embedded here, so neither an
// installed emulator nor one in a test process looks for a file.

#include <string_view>

namespace exedev::emulator {

/// The bytes of the shared object, to be written to a file sshd can load.
std::string_view any_user_shim();

}  // namespace exedev::emulator
