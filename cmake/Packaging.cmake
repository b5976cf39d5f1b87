# cmake/Packaging.cmake: `make package` (cmake --build build --target package)
# makes a binary tarball and a Debian package of the epochgate program with
# its example config, docs, license and changelog. The .deb depends on the
# runtime libraries of Debian 12 (the versions the container image installs).
install(FILES config/example.yaml DESTINATION share/doc/epochgate/examples
        RENAME epochgate.yaml)
install(FILES README.md CHANGELOG.md SECURITY.md LICENSE DESTINATION share/doc/epochgate)
install(DIRECTORY docs/ DESTINATION share/doc/epochgate/docs FILES_MATCHING PATTERN "*.md")

set(CPACK_PACKAGE_NAME epochgate)
set(CPACK_PACKAGE_VENDOR "epochgate")
set(CPACK_PACKAGE_CONTACT "epochgate maintainers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Transparent Kafka protocol proxy that enforces leader-epoch fencing")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_RESOURCE_FILE_LICENSE ${CMAKE_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR "TGZ;DEB")
set(CPACK_PACKAGE_FILE_NAME "epochgate-${PROJECT_VERSION}-linux-${CMAKE_SYSTEM_PROCESSOR}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "libc6, libstdc++6, libuv1, libspdlog1.10, libfmt9, libyaml-cpp0.7, libprometheus-cpp-core1.0, libssl3")
# The build keeps debug info (RelWithDebInfo); the packaged program does not.
set(CPACK_STRIP_FILES ON)
# The package (and `make install`) takes what is built: `make package` builds first.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)
include(CPack)
