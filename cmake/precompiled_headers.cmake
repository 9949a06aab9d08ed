# Precompiled headers. The standard library's, MLX's and nlohmann's headers
# (and GoogleTest's, CLI11's) are parsed once per kind of target instead of
# once per file, where they were a third to a half of a file's compile time.
# Each kind's header is built once, by a provider target, and reused by
# every target of that kind, so they all compile with the same options;
# -Winvalid-pch (an error here) says so when one does not.
#
# Left out: the kernels (their files set their own instruction sets) and
# their tests. GCC 12 reports false -Wstringop-overflow and -Warray-bounds
# warnings for `"text" + std::string` once std::string comes precompiled
# (GCC bugs 105329, 105651: the reason -Wrestrict is off), so GCC builds
# drop those two in the targets that use a precompiled header; clang's
# build (scripts/sanitize) keeps its bounds warnings, and ASan checks at
# run time.
option(MLX_CPP_PRECOMPILED_HEADERS "Precompile the common headers of each kind of target" ON)

set(MLX_CPP_PCH_STANDARD
  <algorithm> <array> <atomic> <chrono> <cmath> <condition_variable> <cstdint> <cstring>
  <deque> <filesystem> <fstream> <functional> <iostream> <limits> <map> <memory> <mutex>
  <optional> <set> <sstream> <stdexcept> <string> <string_view> <thread> <unordered_map>
  <unordered_set> <utility> <variant> <vector>)

# What every kind holds: the standard library's, MLX's and nlohmann's
# headers, and the libraries whose include paths they need.
set(MLX_CPP_PCH_COMMON ${MLX_CPP_PCH_STANDARD} <mlx/array.h> <mlx/ops.h> <mlx/transforms.h>
                       <nlohmann/json.hpp>)
set(MLX_CPP_PCH_COMMON_LIBS mlx nlohmann_json::nlohmann_json)

# Files with no hot loop of their own (the tests', the command line's)
# build at -O1 in a Release build: a quarter less compile time; in the
# sanitized build at -O0, half of clang's time on instrumented code (what
# they call is the libraries', optimized as configured). A kind's header is
# built with its files' level.
set(MLX_CPP_LIGHT_OPTIMIZATION)
if(MLX_CPP_SANITIZE)
  set(MLX_CPP_LIGHT_OPTIMIZATION -O0)
elseif(CMAKE_BUILD_TYPE STREQUAL "Release")
  set(MLX_CPP_LIGHT_OPTIMIZATION -O1)
endif()

# mlx_cpp_pch_provider(NAME HEADERS ... [OPTIONS ...] [LIBS ...]): the
# target that builds kind NAME's header, with the include paths of LIBS.
function(mlx_cpp_pch_provider name)
  if(NOT MLX_CPP_PRECOMPILED_HEADERS)
    return()
  endif()
  cmake_parse_arguments(PCH "" "" "HEADERS;OPTIONS;LIBS" ${ARGN})
  set(stub "${CMAKE_BINARY_DIR}/precompiled_headers/${name}.cpp")
  # Written only when it changes, so a configure does not rebuild it.
  file(CONFIGURE OUTPUT "${stub}" CONTENT "// Builds the ${name} precompiled header.\n")
  add_library(mlx_cpp_pch_${name} OBJECT "${stub}")
  target_compile_options(mlx_cpp_pch_${name} PRIVATE ${MLX_CPP_WARNINGS} ${PCH_OPTIONS})
  target_link_libraries(mlx_cpp_pch_${name} PRIVATE ${PCH_LIBS})
  target_precompile_headers(mlx_cpp_pch_${name} PRIVATE ${PCH_HEADERS})
endfunction()

# mlx_cpp_use_pch(TARGET NAME): TARGET's files start from kind NAME's header.
function(mlx_cpp_use_pch target name)
  if(MLX_CPP_PRECOMPILED_HEADERS)
    target_precompile_headers(${target} REUSE_FROM mlx_cpp_pch_${name})
    target_compile_options(${target} PRIVATE -Winvalid-pch)
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
      target_compile_options(${target} PRIVATE -Wno-stringop-overflow -Wno-array-bounds)
    endif()
  endif()
endfunction()
