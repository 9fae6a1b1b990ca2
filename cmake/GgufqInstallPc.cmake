# Run by `cmake --install` (install(SCRIPT) in CMakeLists.txt): writes ggufq.pc
# with the prefix being installed to, so its paths are absolute and clean
# (prefix=/usr/local, libdir=${prefix}/lib) whatever --prefix or PREFIX= says.
# GGUFQ_PC_TEMPLATE and GGUFQ_PC_DIR come from the install(CODE) just before.
if(NOT DEFINED GGUFQ_PC_TEMPLATE OR NOT DEFINED GGUFQ_PC_DIR)
  message(FATAL_ERROR "GgufqInstallPc.cmake: run it through cmake --install")
endif()
get_filename_component(GGUFQ_PC_PREFIX "${CMAKE_INSTALL_PREFIX}" ABSOLUTE)
if(IS_ABSOLUTE "${GGUFQ_PC_DIR}")
  set(pc_dir "${GGUFQ_PC_DIR}")
else()
  set(pc_dir "${GGUFQ_PC_PREFIX}/${GGUFQ_PC_DIR}")
endif()
set(pc_file "$ENV{DESTDIR}${pc_dir}/ggufq.pc")
if(NOT (CMAKE_INSTALL_COMPONENT STREQUAL "Unspecified" OR NOT CMAKE_INSTALL_COMPONENT))
  return()
endif()
message(STATUS "Installing: ${pc_file}")
configure_file("${GGUFQ_PC_TEMPLATE}" "${pc_file}" @ONLY)
# Listed in install_manifest.txt like every installed file (make uninstall reads
# it), and the same way: without DESTDIR.
list(APPEND CMAKE_INSTALL_MANIFEST_FILES "${pc_dir}/ggufq.pc")
