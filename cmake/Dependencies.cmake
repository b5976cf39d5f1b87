# Every dependency comes from a Debian package, found by name (no downloads).
find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBUV REQUIRED IMPORTED_TARGET libuv)
find_package(spdlog REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(prometheus-cpp REQUIRED COMPONENTS core)
find_package(GTest REQUIRED)
find_package(Threads REQUIRED)
# OpenSSL 3 (libssl-dev): TLS on both sides (libssl), SCRAM's PBKDF2 and HMAC for
# epochgate's own SASL logins (libcrypto).
find_package(OpenSSL 3 REQUIRED)
find_package(Python3 REQUIRED COMPONENTS Interpreter)
if(EPOCHGATE_BENCH)
  find_package(benchmark REQUIRED)
endif()

# llhttp: Debian's node-llhttp ships the generated C sources, not a library.
set(LLHTTP_SOURCE_DIR /usr/share/llhttp CACHE PATH "llhttp C sources (Debian node-llhttp)")
set(LLHTTP_INCLUDE_DIR /usr/share/include/llhttp CACHE PATH "llhttp header (Debian node-llhttp)")
if(NOT EXISTS ${LLHTTP_SOURCE_DIR}/llhttp.c)
  message(FATAL_ERROR "llhttp sources not found in ${LLHTTP_SOURCE_DIR}: apt-get install node-llhttp")
endif()
add_library(llhttp STATIC ${LLHTTP_SOURCE_DIR}/llhttp.c ${LLHTTP_SOURCE_DIR}/api.c
                          ${LLHTTP_SOURCE_DIR}/http.c)
target_include_directories(llhttp SYSTEM PUBLIC ${LLHTTP_INCLUDE_DIR})
target_compile_options(llhttp PRIVATE -w)
set_target_properties(llhttp PROPERTIES POSITION_INDEPENDENT_CODE ON)

# librdkafka 2.15.1 for the test peers (mock cluster and client programs).
if(EPOCHGATE_PEERS)
  if(NOT EPOCHGATE_LIBRDKAFKA_PREFIX)
    execute_process(COMMAND ${CMAKE_SOURCE_DIR}/tools/build-librdkafka.sh
                    OUTPUT_VARIABLE _rdk_prefix OUTPUT_STRIP_TRAILING_WHITESPACE
                    RESULT_VARIABLE _rdk_rc)
    if(NOT _rdk_rc EQUAL 0)
      message(FATAL_ERROR "tools/build-librdkafka.sh failed (${_rdk_rc})")
    endif()
    set(EPOCHGATE_LIBRDKAFKA_PREFIX ${_rdk_prefix} CACHE PATH "" FORCE)
  endif()
  add_library(rdkafka_2_15 INTERFACE)
  target_include_directories(rdkafka_2_15 INTERFACE ${EPOCHGATE_LIBRDKAFKA_PREFIX}/include)
  target_link_libraries(rdkafka_2_15 INTERFACE ${EPOCHGATE_LIBRDKAFKA_PREFIX}/lib/librdkafka.so)
  target_link_options(rdkafka_2_15 INTERFACE -Wl,-rpath,${EPOCHGATE_LIBRDKAFKA_PREFIX}/lib)
endif()
