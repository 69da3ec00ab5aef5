# Helpers shared by every layer's CMakeLists.txt.

# Warnings for the project's own code only; consumers never inherit them.
function(exedev_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic)
  # GCC 12 reports a false -Wmismatched-new-delete on Asio's coroutine frame allocator once
  # coroutines are inlined (any optimised build of awaitable code).
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wno-mismatched-new-delete)
  endif()
  if(EXEDEV_WARNINGS_AS_ERRORS)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# GCC 12 at -O3 (CMake's Release flags) reports false -Wrestrict warnings inside libstdc++'s
# std::string code once it inlines a short literal into a string: assigning a 1-char literal
# (s = "/", https://gcc.gnu.org/bugzilla/show_bug.cgi?id=105329) or concatenating one
# ("/" + s, https://gcc.gnu.org/bugzilla/show_bug.cgi?id=105651). Shape new code so that it does
# not fire (a char instead of a 1-char literal, append instead of operator+, as in
# src/workspace/local_backend_files.cpp); CI's Release build fails on it. For files that still
# trigger it, this turns -Wrestrict off for GCC 12 only and only in the SOURCES of TARGET.
# Usage: exedev_gcc12_false_restrict(TARGET <target> SOURCES <absolute paths>...)
function(exedev_gcc12_false_restrict)
  cmake_parse_arguments(ARG "" "TARGET" "SOURCES" ${ARGN})
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12
     AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    set_property(SOURCE ${ARG_SOURCES} TARGET_DIRECTORY ${ARG_TARGET} APPEND PROPERTY COMPILE_OPTIONS -Wno-restrict)
  endif()
endfunction()

# Asio's build mode, for the project's own targets only. Asio is compiled once, in src/asio,
# and the mode stays PRIVATE: a consumer compiles Asio header-only (its default) or in any mode
# it likes, and src/asio weakens the definitions it compiles so that they never clash with a
# consumer's own (see docs/architecture.md, "Packaging"). The three targets that include Beast
# (exedev_net, exedev, exedev_emulator) add BOOST_BEAST_SEPARATE_COMPILATION the same way.
function(exedev_asio_mode target)
  target_compile_definitions(${target} PRIVATE BOOST_ASIO_SEPARATE_COMPILATION BOOST_ASIO_NO_DEPRECATED)
endfunction()

# A library of the package: public headers under include/, exported as exedev::<alias>.
# Usage: exedev_library(<target> ALIAS <name> SOURCES ... [PUBLIC_LINK ...] [PRIVATE_LINK ...])
function(exedev_library target)
  cmake_parse_arguments(ARG "" "ALIAS" "SOURCES;PUBLIC_LINK;PRIVATE_LINK" ${ARGN})
  add_library(${target} ${ARG_SOURCES})
  add_library(exedev::${ARG_ALIAS} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${ARG_ALIAS} OUTPUT_NAME exedev_${ARG_ALIAS}
                                             POSITION_INDEPENDENT_CODE ON)
  target_compile_features(${target} PUBLIC cxx_std_20)
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
    PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${target} PUBLIC ${ARG_PUBLIC_LINK} PRIVATE ${ARG_PRIVATE_LINK})
  exedev_warnings(${target})
  exedev_asio_mode(${target})
  set_property(GLOBAL APPEND PROPERTY EXEDEV_INSTALL_TARGETS ${target})
endfunction()

# A CTest entry whose output is kept in test-output/<name>.log (tests/run_logged.sh) and read by
# token_never_in_test_output, which runs after every entry of the fixture: every entry of the
# suite is one of these, so no test's output escapes the token check.
# Usage: exedev_logged_test(NAME <name> COMMAND <target or program> [args...] [LABELS ...]
#                           [TIMEOUT s] [ENVIRONMENT ...] [SKIP_REGEX re] [WILL_FAIL])
# The arguments pass through CMake lists: write a shell script's statements on separate lines,
# never joined by ';'.
function(exedev_logged_test)
  cmake_parse_arguments(ARG "WILL_FAIL" "NAME;TIMEOUT;SKIP_REGEX" "COMMAND;LABELS;ENVIRONMENT" ${ARGN})
  list(POP_FRONT ARG_COMMAND program)
  if(TARGET ${program})
    set(program $<TARGET_FILE:${program}>)
  endif()
  add_test(NAME ${ARG_NAME} COMMAND ${PROJECT_SOURCE_DIR}/tests/run_logged.sh
           ${EXEDEV_TEST_OUTPUT_DIR}/${ARG_NAME}.log ${program} ${ARG_COMMAND})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  set_tests_properties(${ARG_NAME} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT}
                       FIXTURES_REQUIRED exedev_test_output)
  if(ARG_ENVIRONMENT)
    set_tests_properties(${ARG_NAME} PROPERTIES ENVIRONMENT "${ARG_ENVIRONMENT}")
  endif()
  if(ARG_SKIP_REGEX)
    set_tests_properties(${ARG_NAME} PROPERTIES SKIP_REGULAR_EXPRESSION "${ARG_SKIP_REGEX}")
  endif()
  if(ARG_WILL_FAIL)
    set_tests_properties(${ARG_NAME} PROPERTIES WILL_FAIL ON)
  endif()
endfunction()

# A Catch2 test executable registered in CTest with labels.
# Usage: exedev_test(<name> LABELS unit [integration ...] SOURCES ... LINK ... [PERMISSIONS])
# PERMISSIONS: the binary has [permissions] test cases, which depend on file permissions root
# bypasses. The main entry leaves them out; they run in two more entries (see
# tests/run_permission_checks.sh): <name>_unprivileged, as root without CAP_DAC_OVERRIDE and
# CAP_DAC_READ_SEARCH (or as the non-root user running the suite), which must pass, and
# <name>_with_dac_override, as root with them, which must fail (WILL_FAIL): proof that the first
# one checked permissions. Each skips, saying why, only where its setup is impossible.
function(exedev_test name)
  cmake_parse_arguments(ARG "PERMISSIONS" "TIMEOUT" "LABELS;SOURCES;LINK" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LINK} Catch2::Catch2WithMain)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests)
  exedev_warnings(${name})
  exedev_asio_mode(${name})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  # One CTest entry per executable keeps the Catch2 output (and its summary) in one place.
  # Every entry's output is also kept in test-output/<entry>.log for token_never_in_test_output.
  set(logged ${PROJECT_SOURCE_DIR}/tests/run_logged.sh ${EXEDEV_TEST_OUTPUT_DIR})
  if(ARG_PERMISSIONS)
    add_test(NAME ${name} COMMAND ${logged}/${name}.log $<TARGET_FILE:${name}> --durations no "~[permissions]")
    foreach(variant unprivileged:dropped with_dac_override:kept)
      string(REPLACE ":" ";" variant ${variant})
      list(GET variant 0 suffix)
      list(GET variant 1 capabilities)
      add_test(NAME ${name}_${suffix}
               COMMAND ${logged}/${name}_${suffix}.log ${PROJECT_SOURCE_DIR}/tests/run_permission_checks.sh
                       ${capabilities} $<TARGET_FILE:${name}> --durations no "[permissions]")
      set_tests_properties(${name}_${suffix} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT}
                           SKIP_REGULAR_EXPRESSION "^skipped: " FIXTURES_REQUIRED exedev_test_output)
    endforeach()
    set_tests_properties(${name}_with_dac_override PROPERTIES WILL_FAIL ON)
  else()
    add_test(NAME ${name} COMMAND ${logged}/${name}.log $<TARGET_FILE:${name}> --durations no)
  endif()
  set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT}
                       FIXTURES_REQUIRED exedev_test_output)
  # An SSH connection that names no known_hosts file (a backend on an emulator with a key found in
  # ~/.ssh) records host keys in the entry's own file, never in the user's ~/.ssh/known_hosts
  # (tests/CMakeLists.txt checks that file is untouched).
  set_property(TEST ${name} APPEND PROPERTY ENVIRONMENT EXE_SSH_KNOWN_HOSTS=${EXEDEV_TEST_OUTPUT_DIR}/${name}.known_hosts)
endfunction()
