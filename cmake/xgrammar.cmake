# xgrammar's C++ core from its PyPI source distribution (deps/xgrammar.txt:
# version, URL and SHA-256), compiled as our own static target. Its own
# CMakeLists cannot be used as it stands: its cmake/config.cmake switches
# the Python bindings on (nanobind, tvm_ffi), which we do not build.
include(FetchContent)
file(STRINGS "${PROJECT_SOURCE_DIR}/deps/xgrammar.txt" xgrammar_pins REGEX "^[a-z0-9]+=")
foreach(pin ${xgrammar_pins})
  string(REGEX MATCH "^([a-z0-9]+)=(.*)$" _ "${pin}")
  set(xgrammar_${CMAKE_MATCH_1} "${CMAKE_MATCH_2}")
endforeach()
FetchContent_Declare(xgrammar_sdist
  URL "${xgrammar_url}"
  URL_HASH SHA256=${xgrammar_sha256}
  DOWNLOAD_EXTRACT_TIMESTAMP TRUE)
FetchContent_GetProperties(xgrammar_sdist)
if(NOT xgrammar_sdist_POPULATED)
  FetchContent_Populate(xgrammar_sdist)
endif()

file(GLOB_RECURSE xgrammar_sources CONFIGURE_DEPENDS "${xgrammar_sdist_SOURCE_DIR}/cpp/*.cc")
list(FILTER xgrammar_sources EXCLUDE REGEX "/cpp/(tvm_ffi|nanobind)/")
add_library(xgrammar STATIC ${xgrammar_sources})
target_compile_features(xgrammar PUBLIC cxx_std_17)
# It is written for C++17: built as C++20, clang 14 rejects two of its files
# (a variant of a type still incomplete where C++20's library checks it).
set_target_properties(xgrammar PROPERTIES CXX_STANDARD 17)
target_include_directories(xgrammar SYSTEM PUBLIC "${xgrammar_sdist_SOURCE_DIR}/include"
  "${xgrammar_sdist_SOURCE_DIR}/3rdparty/picojson"
  "${xgrammar_sdist_SOURCE_DIR}/3rdparty/dlpack/include")
target_compile_definitions(xgrammar PUBLIC XGRAMMAR_ENABLE_CPPTRACE=0
                                           XGRAMMAR_ENABLE_INTERNAL_CHECK=0)
set_target_properties(xgrammar PROPERTIES POSITION_INDEPENDENT_CODE ON)
