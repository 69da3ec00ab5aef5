# Drives one consumer build (see CMakeLists.txt beside this file). Fails on the first error.
function(run_step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "step failed (${result}): ${ARGN}\n${output}")
  endif()
endfunction()

set(consumer_build ${WORK_DIR}/${MODE}/build)
file(REMOVE_RECURSE ${WORK_DIR}/${MODE})
set(configure_options -G ${GENERATOR} -DCMAKE_BUILD_TYPE=${BUILD_TYPE}
    "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${LINKER_FLAGS}")

if(MODE STREQUAL "find_package")
  set(prefix ${WORK_DIR}/${MODE}/prefix)
  run_step(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
  foreach(expected include/exedev/workspace/workspace.hpp include/exedev/exedev.hpp bin/exedev-emulator
                   lib/cmake/exedev/exedevConfig.cmake
                   lib/cmake/exedev/exedevConfigVersion.cmake lib/pkgconfig/exedev.pc)
    if(NOT EXISTS ${prefix}/${expected})
      message(FATAL_ERROR "the installed package lacks ${expected}")
    endif()
  endforeach()
  run_step(${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${consumer_build} ${configure_options}
           -DCMAKE_PREFIX_PATH=${prefix})
else()
  run_step(${CMAKE_COMMAND} -S ${SUBDIRECTORY_DIR} -B ${consumer_build} ${configure_options}
           -DEXEDEV_SOURCE_DIR=${SOURCE_DIR} -DCONSUMER_DIR=${CONSUMER_DIR})
endif()
run_step(${CMAKE_COMMAND} --build ${consumer_build})
if(MODE STREQUAL "find_package")
  run_step(${consumer_build}/exedev_consumer)
else()
  run_step(${consumer_build}/consumer/exedev_consumer)
endif()
message(STATUS "${MODE}: the consumer built against exedev and ran")
