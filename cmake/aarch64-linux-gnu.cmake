# Cross toolchain for AArch64 (NEON) builds, run under qemu-user.
# Debian packages: gcc-aarch64-linux-gnu g++-aarch64-linux-gnu qemu-user, and the
# arm64 multiarch libraries libc6:arm64 libcmocka-dev:arm64 libsleef-dev:arm64
# (scripts/install-deps --neon installs them).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /usr)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
# No -L / QEMU_LD_PREFIX: with it qemu hangs on programs that start threads.
# The arm64 runtime comes from the multiarch packages instead.
set(CMAKE_CROSSCOMPILING_EMULATOR /usr/bin/qemu-aarch64)
