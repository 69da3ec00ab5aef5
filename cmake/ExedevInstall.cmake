# Installs every library registered by exedev_library(), the public headers, the CMake package
# (exedevConfig.cmake + version file, with the emulator as an imported executable) and the
# pkg-config files.
include(CMakePackageConfigHelpers)

get_property(_exedev_targets GLOBAL PROPERTY EXEDEV_INSTALL_TARGETS)
get_property(_exedev_programs GLOBAL PROPERTY EXEDEV_INSTALL_PROGRAMS)
set(EXEDEV_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/exedev)

# Programs (the emulator) are exported as imported executables too: exedev::exedev-emulator.
install(TARGETS ${_exedev_targets} ${_exedev_programs} EXPORT exedevTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/exedev DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT exedevTargets NAMESPACE exedev:: DESTINATION ${EXEDEV_CMAKE_DIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/exedevConfig.cmake.in
  ${PROJECT_BINARY_DIR}/exedevConfig.cmake INSTALL_DESTINATION ${EXEDEV_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/exedevConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/exedevConfig.cmake ${PROJECT_BINARY_DIR}/exedevConfigVersion.cmake
  DESTINATION ${EXEDEV_CMAKE_DIR})

# pkg-config: one file per entry point, each listing its libraries in link order. The prefix is
# derived from the file's own location, so the package can be installed under any prefix.
file(RELATIVE_PATH EXEDEV_PC_PREFIX_FROM_PCFILEDIR /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" EXEDEV_PC_PREFIX_FROM_PCFILEDIR "${EXEDEV_PC_PREFIX_FROM_PCFILEDIR}")
function(exedev_pkg_config name)
  set(EXEDEV_PC_LIBS "")
  foreach(library IN LISTS ARGN)
    if(TARGET exedev::${library})
      string(APPEND EXEDEV_PC_LIBS " -lexedev_${library}")
    endif()
  endforeach()
  configure_file(${PROJECT_SOURCE_DIR}/cmake/${name}.pc.in ${PROJECT_BINARY_DIR}/${name}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/${name}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endfunction()
exedev_pkg_config(exedev tools sandbox client ssh errors workspace common net asio)
exedev_pkg_config(exedev-emulator emulator common net asio)
