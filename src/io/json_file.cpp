#include "io/json_file.h"

#include <fstream>
#include <sstream>

#include "io/error.h"
#include "io/json_depth.h"

namespace mlx_cpp {

nlohmann::json read_json_file(const std::filesystem::path& path) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream) throw Error("cannot open " + path.string());
  std::stringstream buffer;
  buffer << stream.rdbuf();
  const std::string text = buffer.str();
  check_json_depth(text, path.string());
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& error) {  // syntax, or a number out of range
    throw Error("malformed JSON in " + path.string() + ": " + error.what());
  }
}

void write_json_file(const std::filesystem::path& path, const nlohmann::json& value, int indent) {
  std::string text;
  try {
    text = value.dump(indent);
  } catch (const nlohmann::json::type_error& error) {
    // Strings from a model file (GGUF metadata) that are not UTF-8.
    throw Error("cannot write " + path.string() + ": a string in it is not valid UTF-8 (" +
                error.what() + ")");
  }
  auto temporary = path;
  temporary += ".tmp";
  {
    std::ofstream stream(temporary, std::ios::binary | std::ios::trunc);
    if (!stream) throw Error("cannot write " + temporary.string());
    stream << text << '\n';
    if (!stream.flush()) throw Error("cannot write " + temporary.string());
  }
  std::filesystem::rename(temporary, path);
}

}  // namespace mlx_cpp
