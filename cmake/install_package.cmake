# What `cmake --install build --prefix P` writes besides the programs and
# libnanort.a (nanort/, compiler/ and tools/ install those):
#   P/lib/cmake/nanort/   the CMake package: find_package(nanort CONFIG)
#                         gives nanort::nanort, nanort::nanoc and
#                         nanort_add_model() (nanortAddModel.cmake)
#   P/lib/pkgconfig/nanort.pc
include(CMakePackageConfigHelpers)
set(NANORT_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/nanort)

install(EXPORT nanortTargets NAMESPACE nanort:: DESTINATION ${NANORT_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/nanortConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/package/nanortConfig.cmake
                              INSTALL_DESTINATION ${NANORT_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/package/nanortConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/package/nanortConfig.cmake
              ${PROJECT_BINARY_DIR}/package/nanortConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/nanortAddModel.cmake
        DESTINATION ${NANORT_INSTALL_CMAKEDIR})

# pkg-config: a static library, so its dependencies are in Libs itself.
set(NANORT_PC_LIBS "-lnanort")
if(NANORT_WITH_THREADS)
  string(APPEND NANORT_PC_LIBS " -lpthread")
endif()
if(NANORT_PLATFORM STREQUAL "posix" AND NANORT_WITH_DLOPEN AND CMAKE_DL_LIBS)
  string(APPEND NANORT_PC_LIBS " -l${CMAKE_DL_LIBS}")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/nanort.pc.in ${PROJECT_BINARY_DIR}/package/nanort.pc
               @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/package/nanort.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
