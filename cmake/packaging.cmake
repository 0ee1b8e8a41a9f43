# How other projects find an installed libportable:
#  - pkg-config: <libdir>/pkgconfig/portable.pc, and portable-dist.pc where
#    libportable-dist was built (their prefix is relative to the .pc file, so
#    a moved prefix still works);
#  - CMake: find_package(portable [version] [COMPONENTS cpu opencl cuda dist])
#    gives the imported targets portable::portable and (where built)
#    portable::dist, portable_BACKENDS (the plugins this copy was built with)
#    and portable_PLUGIN_DIR;
#  - add_subdirectory/FetchContent: the same target names (core/ and dist/
#    make the aliases).

# The version lives in include/portable/version.h (what pt_version() and
# PT_VERSION_NUMBER report); project(VERSION) must say the same.
file(STRINGS ${PROJECT_SOURCE_DIR}/include/portable/version.h pt_version_lines
     REGEX "^#define PT_VERSION_(MAJOR|MINOR|PATCH) [0-9]+$")
set(pt_header_version "")
foreach(part MAJOR MINOR PATCH)
  string(REGEX MATCH "PT_VERSION_${part} ([0-9]+)" _ "${pt_version_lines}")
  list(APPEND pt_header_version ${CMAKE_MATCH_1})
endforeach()
string(REPLACE ";" "." pt_header_version "${pt_header_version}")
if(NOT pt_header_version STREQUAL PROJECT_VERSION)
  message(FATAL_ERROR "include/portable/version.h says ${pt_header_version} but project(VERSION) "
                      "says ${PROJECT_VERSION}: change both together")
endif()

# The backends whose plugins this build installs.
set(PT_BUILT_BACKENDS "")
foreach(backend ${PT_BACKENDS})
  if(TARGET portable-${backend})
    list(APPEND PT_BUILT_BACKENDS ${backend})
  endif()
endforeach()
# find_package components: the backends, and dist where libportable-dist was built.
set(PT_BUILT_COMPONENTS ${PT_BUILT_BACKENDS})
if(TARGET portable-dist)
  list(APPEND PT_BUILT_COMPONENTS dist)
endif()
message(STATUS "libportable ${PROJECT_VERSION}: plugins installed: ${PT_BUILT_BACKENDS}")

include(CMakePackageConfigHelpers)
set(PT_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/portable)
set(PT_PKGCONFIG_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

install(EXPORT portableTargets NAMESPACE portable:: DESTINATION ${PT_CMAKE_INSTALL_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/portableConfig.cmake.in
  ${PROJECT_BINARY_DIR}/portableConfig.cmake
  INSTALL_DESTINATION ${PT_CMAKE_INSTALL_DIR}
  PATH_VARS PT_PLUGIN_INSTALL_DIR CMAKE_INSTALL_INCLUDEDIR)
# 0.x releases keep the ABI of SONAME libportable.so.0: any 0.y >= the asked
# version will do, like any later 1.y for 1.x.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/portableConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/portableConfig.cmake
              ${PROJECT_BINARY_DIR}/portableConfigVersion.cmake
        DESTINATION ${PT_CMAKE_INSTALL_DIR})

# pkg-config: paths relative to ${pcfiledir} when the install dirs are
# relative (the usual case), so the prefix can move.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(PT_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(PT_PC_LIBDIR "${CMAKE_INSTALL_FULL_LIBDIR}")
  set(PT_PC_INCLUDEDIR "${CMAKE_INSTALL_FULL_INCLUDEDIR}")
else()
  # <prefix>/<libdir>/pkgconfig -> <prefix>: one ".." per folder
  string(REGEX REPLACE "[^/]+" ".." pt_pc_up "${PT_PKGCONFIG_INSTALL_DIR}")
  set(PT_PC_PREFIX "\${pcfiledir}/${pt_pc_up}")
  set(PT_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
  set(PT_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
string(REPLACE ";" " " PT_PC_BACKENDS "${PT_BUILT_BACKENDS}")
# The license, by its SPDX name, in both .pc files (pkgconf 1.9 reads the
# License field; older pkg-config ignores it, hence the variable too).
set(PT_LICENSE MIT)
configure_file(${CMAKE_CURRENT_LIST_DIR}/portable.pc.in ${PROJECT_BINARY_DIR}/portable.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/portable.pc DESTINATION ${PT_PKGCONFIG_INSTALL_DIR})
if(TARGET portable-dist)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/portable-dist.pc.in ${PROJECT_BINARY_DIR}/portable-dist.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/portable-dist.pc DESTINATION ${PT_PKGCONFIG_INSTALL_DIR})
endif()
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})
