#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>

namespace mlx_cpp {

// Reads and parses a JSON file; throws Error naming the file on a missing
// file or a parse error (with nlohmann's byte position).
nlohmann::json read_json_file(const std::filesystem::path& path);

// Writes JSON with a trailing newline atomically (temp file + rename), so a
// crash never leaves a half-written file behind.
void write_json_file(const std::filesystem::path& path, const nlohmann::json& value,
                     int indent = 2);

}  // namespace mlx_cpp
