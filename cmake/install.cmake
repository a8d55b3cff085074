# Installation: `cmake --install BUILD [--prefix DIR]` installs
#   include/copysynth/*.hpp, copysynth.h, version.h   the C++ and C headers
#   lib/libcopysynth.a                                 the API (copysynth::copysynth), without the tuner
#   lib/libcopysynth-tune.a                            tune_and_install, copysynth_tune (copysynth::tune)
#   lib/libcopysynth_{tuner,verify,runtime,templates,generator}.a   the modules under them
#   lib/libcopysynth-preload.so                        the LD_PRELOAD shim
#   bin/autotune                                       the tool
#   lib/cmake/copysynth/                               find_package(copysynth): copysynth::copysynth, ::tune
#   lib/pkgconfig/copysynth.pc, copysynth-tune.pc      pkg-config --cflags --libs copysynth [copysynth-tune]
#   share/copysynth/size-distributions/                the shipped size distributions
# (lib is CMAKE_INSTALL_LIBDIR: lib/x86_64-linux-gnu under /usr on Debian.)
#
# Static libraries, not shared ones: the C++ API exposes C++ types (no stable ABI across compilers
# and standard libraries), and the process-wide routine slots must exist once per program; a
# static archive links into a program (copysynth's objects are position-independent, Debian's
# libasmjit.a is not, so not into a shared library of the user's on Debian). Only the shim is a shared library: LD_PRELOAD needs one, and it keeps everything but
# memcpy/memmove/memset and their _chk forms local.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(copysynth_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/copysynth)
set_target_properties(copysynth_generator PROPERTIES EXPORT_NAME generator)
set_target_properties(copysynth_templates PROPERTIES EXPORT_NAME templates)
set_target_properties(copysynth_runtime PROPERTIES EXPORT_NAME runtime)
set_target_properties(copysynth_verify PROPERTIES EXPORT_NAME verify)
set_target_properties(copysynth_tuner PROPERTIES EXPORT_NAME tuner)

install(TARGETS copysynth_api copysynth_api_tune copysynth_tuner copysynth_verify copysynth_runtime
                copysynth_templates copysynth_generator
        EXPORT copysynthTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS copysynth_preload LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS autotune RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY generator/include/ templates/include/ runtime/include/ verify/include/ tuner/include/
                  api/include/
                  ${PROJECT_BINARY_DIR}/include/
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY data/size-distributions/ DESTINATION ${CMAKE_INSTALL_DATADIR}/copysynth/size-distributions)

install(EXPORT copysynthTargets NAMESPACE copysynth:: DESTINATION ${copysynth_cmake_dir})
configure_package_config_file(cmake/copysynthConfig.cmake.in ${PROJECT_BINARY_DIR}/copysynthConfig.cmake
  INSTALL_DESTINATION ${copysynth_cmake_dir}
  PATH_VARS CMAKE_INSTALL_LIBDIR CMAKE_INSTALL_BINDIR CMAKE_INSTALL_DATADIR)
# 0.x: a minor version may change the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/copysynthConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/copysynthConfig.cmake ${PROJECT_BINARY_DIR}/copysynthConfigVersion.cmake
        DESTINATION ${copysynth_cmake_dir})

# pkg-config: prefix relative to the .pc file, so `cmake --install --prefix ANY` works.
file(RELATIVE_PATH copysynth_pc_prefix "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
# copysynth-tune.pc: the tuning entry points on top of copysynth.pc (Requires: copysynth).
configure_file(cmake/copysynth.pc.in ${PROJECT_BINARY_DIR}/copysynth.pc @ONLY)
configure_file(cmake/copysynth-tune.pc.in ${PROJECT_BINARY_DIR}/copysynth-tune.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/copysynth.pc ${PROJECT_BINARY_DIR}/copysynth-tune.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
