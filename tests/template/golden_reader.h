#pragma once
// Reads a golden JSON file written by an oracle script, keeping key order.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace mlx_cpp::testing {

inline nlohmann::ordered_json read_golden(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    ADD_FAILURE() << "missing golden " << path << " (run the oracle fixture first)";
    return nullptr;
  }
  std::stringstream text;
  text << file.rdbuf();
  return nlohmann::ordered_json::parse(text.str());
}

inline std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

}  // namespace mlx_cpp::testing
