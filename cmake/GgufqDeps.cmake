# Finds ggufq's dependencies; each failure says which Debian package to install.
set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)

find_package(OpenMP COMPONENTS C)
if(NOT OpenMP_C_FOUND)
  message(FATAL_ERROR "OpenMP for C not found: install gcc's libgomp (apt-get install libgomp1), "
                      "or run scripts/install-deps")
endif()

# SLEEF: no CMake package in Debian; pkg-config first, then a plain search.
pkg_check_modules(SLEEF QUIET IMPORTED_TARGET sleef)
add_library(ggufq::sleef INTERFACE IMPORTED)
if(SLEEF_FOUND)
  target_link_libraries(ggufq::sleef INTERFACE PkgConfig::SLEEF)
else()
  find_path(SLEEF_INCLUDE_DIR sleef.h)
  find_library(SLEEF_LIBRARY sleef)
  if(NOT SLEEF_INCLUDE_DIR OR NOT SLEEF_LIBRARY)
    message(FATAL_ERROR "SLEEF not found: apt-get install libsleef-dev (or run scripts/install-deps)")
  endif()
  target_include_directories(ggufq::sleef INTERFACE ${SLEEF_INCLUDE_DIR})
  target_link_libraries(ggufq::sleef INTERFACE ${SLEEF_LIBRARY})
endif()

if(GGUFQ_BUILD_TESTS)
  find_package(cmocka CONFIG QUIET)
  if(cmocka_FOUND OR CMOCKA_FOUND)
    add_library(ggufq::cmocka INTERFACE IMPORTED)
    target_include_directories(ggufq::cmocka INTERFACE ${CMOCKA_INCLUDE_DIR})
    target_link_libraries(ggufq::cmocka INTERFACE ${CMOCKA_LIBRARIES})
  else()
    pkg_check_modules(CMOCKA QUIET IMPORTED_TARGET cmocka)
    if(NOT CMOCKA_FOUND)
      message(FATAL_ERROR "cmocka not found: apt-get install libcmocka-dev (or run scripts/install-deps), "
                          "or configure with -DGGUFQ_BUILD_TESTS=OFF")
    endif()
    add_library(ggufq::cmocka INTERFACE IMPORTED)
    target_link_libraries(ggufq::cmocka INTERFACE PkgConfig::CMOCKA)
  endif()
endif()

if(GGUFQ_BUILD_BENCH)
  find_package(benchmark CONFIG QUIET)
  if(NOT benchmark_FOUND)
    message(FATAL_ERROR "google/benchmark not found: apt-get install libbenchmark-dev "
                        "(or run scripts/install-deps), or configure with -DGGUFQ_BUILD_BENCH=OFF")
  endif()
endif()
