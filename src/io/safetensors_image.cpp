#include "io/safetensors_image.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "io/durable_file.h"
#include "io/error.h"
#include "io/gguf/sha256.h"

namespace mlx_cpp {

void SafetensorsImage::add(const std::string& name, const std::string& dtype,
                           const std::vector<int64_t>& shape, const void* data, std::size_t bytes) {
  if (tensors_.count(name)) throw Error("safetensors image: tensor " + name + " added twice");
  Tensor tensor{dtype, shape, data_.size(), data_.size() + bytes};
  data_.resize(tensor.end);
  if (bytes) std::memcpy(data_.data() + tensor.begin, data, bytes);
  tensors_.emplace(name, std::move(tensor));
}

std::string SafetensorsImage::header() const {
  std::string text = canonical_header().dump();
  // The data section starts 8-byte aligned, as the format asks.
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');
  std::uint64_t length = text.size();
  std::string prefix(8, '\0');
  for (int byte = 0; byte < 8; ++byte)
    prefix[byte] = static_cast<char>((length >> (8 * byte)) & 0xff);
  return prefix + text;
}

namespace {

// SHA-256 of a header (JSON with sorted keys, compact) and a data section.
std::string seal_of(const nlohmann::json& header, const std::uint8_t* data, std::size_t bytes) {
  const std::string text = header.dump();
  return gguf::sha256_parts(
      {{reinterpret_cast<const std::uint8_t*>(text.data()), text.size()}, {data, bytes}});
}

// The dtype as safetensors names it.
std::string safetensors_dtype(mlx::core::Dtype dtype) {
  namespace mx = mlx::core;
  static const std::vector<std::pair<mx::Dtype, const char*>> names = {
      {mx::bool_, "BOOL"}, {mx::uint8, "U8"},    {mx::uint16, "U16"},    {mx::uint32, "U32"},
      {mx::uint64, "U64"}, {mx::int8, "I8"},     {mx::int16, "I16"},     {mx::int32, "I32"},
      {mx::int64, "I64"},  {mx::float16, "F16"}, {mx::bfloat16, "BF16"}, {mx::float32, "F32"}};
  for (const auto& [candidate, name] : names)
    if (candidate == dtype) return name;
  throw Error("safetensors image: an array of a dtype safetensors cannot hold");
}

}  // namespace

void SafetensorsImage::add(const std::string& name, const mlx::core::array& array) {
  std::vector<int64_t> shape(array.shape().begin(), array.shape().end());
  add(name, safetensors_dtype(array.dtype()), shape, array.data<std::uint8_t>(), array.nbytes());
}

nlohmann::json SafetensorsImage::canonical_header() const {
  nlohmann::json json = nlohmann::json::object();
  if (!metadata.empty()) json["__metadata__"] = metadata;
  for (const auto& [name, tensor] : tensors_)
    json[name] = {{"dtype", tensor.dtype},
                  {"shape", tensor.shape},
                  {"data_offsets", {tensor.begin, tensor.end}}};
  return json;
}

void SafetensorsImage::seal(const std::string& key) {
  metadata.erase(key);
  metadata[key] = seal_of(canonical_header(), data_.data(), data_.size());
}

bool safetensors_seal_holds(const std::filesystem::path& path, const std::string& key) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 8) return false;
  std::uint64_t length = 0;
  for (int byte = 7; byte >= 0; --byte)
    length = (length << 8) | static_cast<std::uint8_t>(bytes[byte]);
  if (length > bytes.size() - 8) return false;
  auto header = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + length, nullptr,
                                      /*allow_exceptions=*/false);
  if (!header.is_object() || !header.contains("__metadata__")) return false;
  auto& metadata = header["__metadata__"];
  if (!metadata.is_object() || !metadata.contains(key) || !metadata[key].is_string()) return false;
  const std::string expected = metadata[key].get<std::string>();
  metadata.erase(key);
  if (metadata.empty()) header.erase("__metadata__");
  const auto* data = reinterpret_cast<const std::uint8_t*>(bytes.data()) + 8 + length;
  return seal_of(header, data, bytes.size() - 8 - length) == expected;
}

void SafetensorsImage::write(const std::filesystem::path& path,
                             const std::function<void()>& midway) const {
  const std::string head = header();
  write_durably(path, [&](const std::filesystem::path& temporary) {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(head.data(), static_cast<std::streamsize>(head.size()));
    const auto* bytes = reinterpret_cast<const char*>(data_.data());
    const auto half = static_cast<std::streamsize>(data_.size() / 2);
    out.write(bytes, half);
    if (midway) {
      out.flush();
      midway();
    }
    out.write(bytes + half, static_cast<std::streamsize>(data_.size()) - half);
    out.flush();
    if (!out) throw Error("cannot write " + path.string() + " (disk full or not writable?)");
  });
}

}  // namespace mlx_cpp
