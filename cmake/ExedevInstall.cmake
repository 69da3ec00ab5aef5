# Installs every library registered by exedev_library(), the public headers, the CMake package
# (exedevConfig.cmake + version file) and a pkg-config file.
include(CMakePackageConfigHelpers)

get_property(_exedev_targets GLOBAL PROPERTY EXEDEV_INSTALL_TARGETS)
get_property(_exedev_programs GLOBAL PROPERTY EXEDEV_INSTALL_PROGRAMS)
set(EXEDEV_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/exedev)

install(TARGETS ${_exedev_targets} EXPORT exedevTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(_exedev_programs)
  install(TARGETS ${_exedev_programs} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/exedev DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT exedevTargets NAMESPACE exedev:: DESTINATION ${EXEDEV_CMAKE_DIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/exedevConfig.cmake.in
  ${PROJECT_BINARY_DIR}/exedevConfig.cmake INSTALL_DESTINATION ${EXEDEV_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/exedevConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/exedevConfig.cmake ${PROJECT_BINARY_DIR}/exedevConfigVersion.cmake
  DESTINATION ${EXEDEV_CMAKE_DIR})

# pkg-config: the umbrella library and everything it needs, in link order.
set(_exedev_pc_libs "")
foreach(_lib IN ITEMS tools exedev workspace net asio)
  if(TARGET exedev::${_lib})
    string(APPEND _exedev_pc_libs " -lexedev_${_lib}")
  endif()
endforeach()
configure_file(${PROJECT_SOURCE_DIR}/cmake/exedev.pc.in ${PROJECT_BINARY_DIR}/exedev.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/exedev.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
