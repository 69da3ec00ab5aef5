# One install test (see CMakeLists.txt beside this file), chosen by MODE. Fails on the first error.
# .ci/run also runs it by hand against the Release install (find_package with each compiler)
# and with BUILD_SUBPROJECT=ON (add_subdirectory, built and run).
cmake_minimum_required(VERSION 3.25)
function(run_step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "step failed (${result}): ${ARGN}\n${output}")
  endif()
  set(step_output "${output}" PARENT_SCOPE)
endfunction()

# CONSUMER_BUILD_DIR (optional) puts the consumer's build elsewhere: .ci/run builds the
# add_subdirectory consumer at the depth of build/release, so that ccache (CCACHE_BASEDIR)
# finds the library's objects under the same relative paths.
if(CONSUMER_BUILD_DIR)
  set(consumer_build ${CONSUMER_BUILD_DIR})
  file(REMOVE_RECURSE ${consumer_build})
else()
  set(consumer_build ${WORK_DIR}/${MODE}/build)
  file(REMOVE_RECURSE ${WORK_DIR}/${MODE})
endif()
set(configure_options -G ${GENERATOR} -DCMAKE_BUILD_TYPE=${BUILD_TYPE}
    "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${LINKER_FLAGS}")
if(LAUNCHER)
  list(APPEND configure_options -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER})
endif()

if(MODE STREQUAL "package")
  file(REMOVE_RECURSE ${PREFIX})
  run_step(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX})
  foreach(expected include/exedev/workspace/workspace.hpp include/exedev/exedev.hpp bin/exedev-emulator
                   lib/cmake/exedev/exedevConfig.cmake lib/cmake/exedev/exedevConfigVersion.cmake
                   lib/pkgconfig/exedev.pc lib/pkgconfig/exedev-emulator.pc)
    if(NOT EXISTS ${PREFIX}/${expected})
      message(FATAL_ERROR "the installed package lacks ${expected}")
    endif()
  endforeach()
  # Asio's build mode stays inside the library: no macro reaches the consumer.
  file(GLOB exported ${PREFIX}/lib/cmake/exedev/*.cmake ${PREFIX}/lib/pkgconfig/*.pc)
  foreach(file IN LISTS exported)
    file(STRINGS ${file} macros REGEX "BOOST_(ASIO|BEAST)_")
    if(macros)
      message(FATAL_ERROR "${file} passes Asio's build mode to consumers: ${macros}")
    endif()
    file(READ ${file} text)
    string(FIND "${text}" "${PREFIX}" absolute)
    if(file MATCHES "\\.pc$" AND NOT absolute EQUAL -1)
      message(FATAL_ERROR "${file} names the install prefix; it must find it from \${pcfiledir}")
    endif()
  endforeach()
  # The archives define Boost (Asio, Beast, System) only weakly, so a consumer's own definitions
  # win instead of clashing. nm: T/D/B/R are strong global definitions.
  file(GLOB archives ${PREFIX}/lib/libexedev*.a)
  foreach(archive IN LISTS archives)
    run_step(${NM} -C --defined-only ${archive})
    string(REGEX MATCHALL "\n[0-9a-f]+ [TDBR] boost::[^\n]*" strong "${step_output}")
    if(strong)
      list(LENGTH strong count)
      list(GET strong 0 first)
      message(FATAL_ERROR "${archive} defines ${count} Boost symbols strongly, e.g.${first}")
    endif()
  endforeach()
  message(STATUS "package: installed under ${PREFIX}, no Asio macro exported, Boost defined weakly")
  return()
endif()

if(MODE STREQUAL "find_package" OR MODE STREQUAL "find_package_other_compiler")
  if(MODE STREQUAL "find_package_other_compiler")
    if(NOT OTHER_CXX)
      message(STATUS "skipped: no other C++ compiler (clang++ or g++) to build the consumer with")
      return()
    endif()
    list(APPEND configure_options -DCMAKE_CXX_COMPILER=${OTHER_CXX})
  else()
    list(APPEND configure_options -DCMAKE_CXX_COMPILER=${CXX})
  endif()
  run_step(${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${consumer_build} ${configure_options}
           -DCMAKE_PREFIX_PATH=${PREFIX})
  run_step(${CMAKE_COMMAND} --build ${consumer_build})
  run_step(${consumer_build}/exedev_consumer)
elseif(MODE STREQUAL "pkg_config")
  if(NOT PKG_CONFIG)
    message(STATUS "skipped: pkg-config is not installed")
    return()
  endif()
  set(ENV{PKG_CONFIG_PATH} ${PREFIX}/lib/pkgconfig)
  run_step(${PKG_CONFIG} --cflags --libs exedev exedev-emulator)
  string(STRIP "${step_output}" flags)
  separate_arguments(flags UNIX_COMMAND "${flags}")
  separate_arguments(cxx_flags UNIX_COMMAND "${CXX_FLAGS} ${LINKER_FLAGS}")
  file(MAKE_DIRECTORY ${consumer_build})
  # exedev::testing (the coroutine runner the consumer uses) has no .pc: it needs Catch2's CMake
  # package, so it is named here by hand.
  run_step(${LAUNCHER} ${CXX} ${cxx_flags} -DBOOST_ASIO_SEPARATE_COMPILATION
           "-DEXEDEV_EMULATOR_PROGRAM=\"${PREFIX}/bin/exedev-emulator\""
           ${CONSUMER_DIR}/main.cpp ${CONSUMER_DIR}/asio_impl.cpp -o ${consumer_build}/exedev_consumer
           -L${PREFIX}/lib -lexedev_testing ${flags})
  run_step(${consumer_build}/exedev_consumer)
elseif(MODE STREQUAL "add_subdirectory")
  # The subproject's targets come from the target list the user project writes (targets.txt),
  # not from the build tool, so the check is the same with every generator.
  run_step(${CMAKE_COMMAND} -S ${SUBDIRECTORY_DIR} -B ${consumer_build} ${configure_options}
           -DCMAKE_CXX_COMPILER=${CXX} -DEXEDEV_SOURCE_DIR=${SOURCE_DIR} -DCONSUMER_DIR=${CONSUMER_DIR}
           ${SUBPROJECT_OPTIONS})
  file(STRINGS ${consumer_build}/targets.txt targets)
  # As a subproject, exedev builds its libraries only: no tests, examples or benchmarks.
  foreach(target exedev exedev_consumer exedev-emulator)
    if(NOT target IN_LIST targets)
      message(FATAL_ERROR "the subproject build lacks the target ${target}")
    endif()
  endforeach()
  foreach(target demo bench_transfer exedev_header_check)
    if(target IN_LIST targets)
      message(FATAL_ERROR "the subproject build has ${target}, which only a top-level build needs")
    endif()
  endforeach()
  if(NOT BUILD_SUBPROJECT)
    # The CTest entry stops here: building would compile the whole library a second time, and
    # install_in_tree_consumer links the consumer against these targets. CI builds it in Release
    # (.ci/run, step release-install).
    message(STATUS "add_subdirectory: exedev configured as a subproject, libraries only")
    return()
  endif()
  set(parallel)
  if(JOBS)
    set(parallel --parallel ${JOBS})
  endif()
  run_step(${CMAKE_COMMAND} --build ${consumer_build} ${parallel} --target exedev_consumer exedev-emulator)
  run_step(${consumer_build}/consumer/exedev_consumer)
else()
  message(FATAL_ERROR "unknown MODE ${MODE}")
endif()
message(STATUS "${MODE}: the consumer built against exedev and ran")
