# install_package.cmake — what `cmake --install` lays out for users of libsop besides the
# binaries: sop.pc (pkg-config), the CMake package (sop-config.cmake, sop::sop and
# sop::sop_static) and the Python binding. Included from the top CMakeLists.txt.
include(CMakePackageConfigHelpers)

set(SOP_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/sop)
install(EXPORT sopTargets NAMESPACE sop:: FILE sop-targets.cmake DESTINATION ${SOP_CMAKE_DIR})
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/sop-config.cmake.in
                              ${CMAKE_BINARY_DIR}/sop-config.cmake
                              INSTALL_DESTINATION ${SOP_CMAKE_DIR}
                              PATH_VARS CMAKE_INSTALL_INCLUDEDIR)
# Pre-1.0 minors may change the API, so only the same major.minor is "compatible".
write_basic_package_version_file(${CMAKE_BINARY_DIR}/sop-config-version.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/sop-config.cmake ${CMAKE_BINARY_DIR}/sop-config-version.cmake
        DESTINATION ${SOP_CMAKE_DIR})

# pkg-config: the prefix is found from the .pc file's own place (${pcfiledir}), so that
# `cmake --install --prefix X` and a relocated tree both work.
file(RELATIVE_PATH SOP_PC_TO_PREFIX /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
string(REGEX REPLACE "/$" "" SOP_PC_TO_PREFIX "${SOP_PC_TO_PREFIX}")
configure_file(${CMAKE_SOURCE_DIR}/cmake/sop.pc.in ${CMAKE_BINARY_DIR}/sop.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/sop.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The Python binding (ctypes): where Debian's python3 looks — lib/python3/dist-packages under
# /usr, lib/python3.X/dist-packages under another prefix (/usr/local: on sys.path; a custom
# prefix: add it to PYTHONPATH) — with the installed library's directory written into
# sop/_paths.py.
set(_sop_py_default lib/python3/dist-packages)
if(NOT CMAKE_INSTALL_PREFIX STREQUAL "/usr" AND EXISTS /usr/bin/python3)
  execute_process(COMMAND /usr/bin/python3 -c "import sys; print('%d.%d' % sys.version_info[:2])"
                  OUTPUT_VARIABLE _sop_py_ver OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE _sop_py_rc)
  if(_sop_py_rc EQUAL 0 AND _sop_py_ver MATCHES "^3\\.[0-9]+$")
    set(_sop_py_default lib/python${_sop_py_ver}/dist-packages)
  endif()
endif()
set(SOP_PYTHON_DIR ${_sop_py_default} CACHE STRING
    "Where cmake --install puts the Python package `sop` (relative to the prefix)")
install(FILES ${CMAKE_SOURCE_DIR}/python/sop/__init__.py DESTINATION ${SOP_PYTHON_DIR}/sop)
install(CODE "
  set(dir \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${SOP_PYTHON_DIR}/sop\")
  file(WRITE \"\${dir}/_paths.py\"
       \"# Written by cmake --install: where libsop was installed.\\nLIBDIR = r'\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}'\\n\")
  message(STATUS \"Installing: \${dir}/_paths.py\")
")
