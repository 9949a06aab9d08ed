#include "io/gguf/gguf_file.h"

#include <limits>

#include "io/error.h"
#include "io/gguf/byte_reader.h"
#include "io/gguf/ggml_types.h"

namespace mlx_cpp::gguf {
namespace {

constexpr std::uint32_t kMagic = 0x46554747;  // "GGUF" read as little-endian uint32
constexpr std::uint32_t kMaxDims = 4;         // GGML_MAX_DIMS
constexpr int kMaxArrayDepth = 8;             // nested arrays deeper than this are hostile

// Smallest encoded size of one value of a type; bounds element counts before
// any allocation so a huge count cannot exhaust memory.
std::size_t minimum_encoded_size(ValueType type) {
  switch (type) {
    case ValueType::kUint8:
    case ValueType::kInt8:
    case ValueType::kBool:
      return 1;
    case ValueType::kUint16:
    case ValueType::kInt16:
      return 2;
    case ValueType::kUint32:
    case ValueType::kInt32:
    case ValueType::kFloat32:
      return 4;
    case ValueType::kString:
    case ValueType::kUint64:
    case ValueType::kInt64:
    case ValueType::kFloat64:
      return 8;
    case ValueType::kArray:
      return 12;  // element type + count
  }
  return 1;
}

ValueType read_value_type(ByteReader& reader, const char* field) {
  auto raw = reader.read<std::uint32_t>(field);
  if (raw > static_cast<std::uint32_t>(ValueType::kFloat64)) {
    reader.fail(std::string(field) + " is " + std::to_string(raw) + ", not a GGUF value type");
  }
  return static_cast<ValueType>(raw);
}

Value read_value(ByteReader& reader, ValueType type, int depth);

Value read_array(ByteReader& reader, int depth) {
  if (depth >= kMaxArrayDepth) reader.fail("arrays nested deeper than 8 levels");
  Value value;
  value.type = ValueType::kArray;
  value.element_type = read_value_type(reader, "array element type");
  auto count = reader.read<std::uint64_t>("array length");
  if (count > reader.remaining() / minimum_encoded_size(value.element_type)) {
    reader.fail("array of " + std::to_string(count) + " " + value_type_name(value.element_type) +
                " values cannot fit in the " + std::to_string(reader.remaining()) +
                " remaining bytes");
  }
  Value::Array elements;
  elements.reserve(count);
  for (std::uint64_t index = 0; index < count; ++index) {
    elements.push_back(read_value(reader, value.element_type, depth + 1));
  }
  value.data = std::move(elements);
  return value;
}

Value read_value(ByteReader& reader, ValueType type, int depth) {
  Value value;
  value.type = type;
  switch (type) {
    case ValueType::kUint8:
      value.data = std::uint64_t{reader.read<std::uint8_t>("uint8")};
      break;
    case ValueType::kInt8:
      value.data = std::int64_t{reader.read<std::int8_t>("int8")};
      break;
    case ValueType::kUint16:
      value.data = std::uint64_t{reader.read<std::uint16_t>("uint16")};
      break;
    case ValueType::kInt16:
      value.data = std::int64_t{reader.read<std::int16_t>("int16")};
      break;
    case ValueType::kUint32:
      value.data = std::uint64_t{reader.read<std::uint32_t>("uint32")};
      break;
    case ValueType::kInt32:
      value.data = std::int64_t{reader.read<std::int32_t>("int32")};
      break;
    case ValueType::kUint64:
      value.data = reader.read<std::uint64_t>("uint64");
      break;
    case ValueType::kInt64:
      value.data = reader.read<std::int64_t>("int64");
      break;
    case ValueType::kFloat32:
      value.data = double{reader.read<float>("float32")};
      break;
    case ValueType::kFloat64:
      value.data = reader.read<double>("float64");
      break;
    case ValueType::kBool: {
      auto raw = reader.read<std::uint8_t>("bool");
      if (raw > 1) reader.fail("bool value " + std::to_string(raw) + " is neither 0 nor 1");
      value.data = raw == 1;
      break;
    }
    case ValueType::kString:
      value.data = reader.read_string("string value");
      break;
    case ValueType::kArray:
      return read_array(reader, depth);
  }
  return value;
}

std::uint32_t read_version(ByteReader& reader) {
  auto version = reader.read<std::uint32_t>("version");
  if (version == 2 || version == 3) return version;
  if (version == 1) reader.fail("GGUF version 1 is not supported (only 2 and 3)");
  if ((version & 0xFFFF) == 0 && (version >> 16) != 0) {
    reader.fail("big-endian GGUF files are not supported");
  }
  reader.fail("unsupported GGUF version " + std::to_string(version) + " (only 2 and 3)");
}

// Validates dims and type and computes element count and byte size.
void read_tensor_geometry(ByteReader& reader, TensorInfo& tensor) {
  auto dim_count = reader.read<std::uint32_t>("tensor dimension count");
  if (dim_count == 0 || dim_count > kMaxDims) {
    reader.fail("tensor " + tensor.name + " has " + std::to_string(dim_count) +
                " dimensions (1 to 4 allowed)");
  }
  tensor.element_count = 1;
  for (std::uint32_t axis = 0; axis < dim_count; ++axis) {
    auto dim = reader.read<std::uint64_t>("tensor dimension");
    if (dim == 0 || dim > static_cast<std::uint64_t>(std::numeric_limits<int>::max())) {
      reader.fail("tensor " + tensor.name + " dimension " + std::to_string(axis) + " is " +
                  std::to_string(dim));
    }
    if (tensor.element_count > static_cast<std::uint64_t>(INT64_MAX) / dim) {
      reader.fail("tensor " + tensor.name + " element count overflows 64 bits");
    }
    tensor.element_count *= dim;
    tensor.dims.push_back(dim);
  }
  tensor.type = reader.read<std::uint32_t>("tensor type");
  const auto* traits = ggml_type_traits(tensor.type);
  if (traits == nullptr) {
    reader.fail("tensor " + tensor.name + " has " + ggml_type_name(tensor.type));
  }
  if (tensor.dims[0] % traits->block_size != 0) {
    reader.fail("tensor " + tensor.name + " row of " + std::to_string(tensor.dims[0]) +
                " elements is not a multiple of the " + traits->name + " block size " +
                std::to_string(traits->block_size));
  }
  tensor.byte_size = tensor.element_count / traits->block_size * traits->type_size;
  tensor.offset = reader.read<std::uint64_t>("tensor offset");
}

}  // namespace

std::vector<int> TensorInfo::shape() const {
  return std::vector<int>(dims.rbegin(), dims.rend());
}

GgufFile::GgufFile(const std::filesystem::path& path) : file_(std::make_unique<MappedFile>(path)) {
  parse();
}

void GgufFile::parse() {
  auto bytes = file_->bytes();
  ByteReader reader(bytes.data(), bytes.size(), file_->path().string());
  if (reader.read<std::uint32_t>("magic") != kMagic) reader.fail("not a GGUF file (bad magic)");
  version_ = read_version(reader);
  auto tensor_count = reader.read<std::uint64_t>("tensor count");
  auto metadata_count = reader.read<std::uint64_t>("metadata count");
  // A key-value pair needs at least a key length, a type and one byte.
  if (metadata_count > reader.remaining() / 13) {
    reader.fail("metadata count " + std::to_string(metadata_count) + " cannot fit in the file");
  }
  for (std::uint64_t index = 0; index < metadata_count; ++index) {
    auto key = reader.read_string("metadata key");
    auto type = read_value_type(reader, "metadata value type");
    auto value = read_value(reader, type, 0);
    if (!metadata_.emplace(key, std::move(value)).second) reader.fail("duplicate key " + key);
  }
  if (const auto* alignment = find("general.alignment")) {
    if (alignment->type != ValueType::kUint32) reader.fail("general.alignment is not a uint32");
    alignment_ = alignment->as_uint();
    if (alignment_ == 0 || (alignment_ & (alignment_ - 1)) != 0) {
      reader.fail("general.alignment " + std::to_string(alignment_) + " is not a power of two");
    }
  }
  // A tensor info needs a name length, one dimension, a type and an offset.
  if (tensor_count > reader.remaining() / 28) {
    reader.fail("tensor count " + std::to_string(tensor_count) + " cannot fit in the file");
  }
  tensors_.reserve(tensor_count);
  for (std::uint64_t index = 0; index < tensor_count; ++index) {
    TensorInfo tensor;
    tensor.name = reader.read_string("tensor name");
    read_tensor_geometry(reader, tensor);
    if (!tensor_index_.emplace(tensor.name, tensors_.size()).second) {
      reader.fail("duplicate tensor " + tensor.name);
    }
    tensors_.push_back(std::move(tensor));
  }
  std::uint64_t end_of_infos = reader.position();
  data_offset_ = (end_of_infos + alignment_ - 1) / alignment_ * alignment_;
  std::uint64_t data_size = bytes.size() >= data_offset_ ? bytes.size() - data_offset_ : 0;
  if (!tensors_.empty() && data_offset_ > bytes.size()) {
    reader.fail("data section starts at " + std::to_string(data_offset_) + ", past the end");
  }
  for (const auto& tensor : tensors_) {
    if (tensor.offset % alignment_ != 0) {
      reader.fail("tensor " + tensor.name + " offset " + std::to_string(tensor.offset) +
                  " is not aligned to " + std::to_string(alignment_));
    }
    if (tensor.offset > data_size || tensor.byte_size > data_size - tensor.offset) {
      reader.fail("tensor " + tensor.name + " data [" + std::to_string(tensor.offset) + ", +" +
                  std::to_string(tensor.byte_size) + ") lies past the end of the " +
                  std::to_string(data_size) + "-byte data section");
    }
  }
}

const Value* GgufFile::find(const std::string& key) const {
  auto found = metadata_.find(key);
  return found == metadata_.end() ? nullptr : &found->second;
}

const Value& GgufFile::require(const std::string& key) const {
  const auto* value = find(key);
  if (value == nullptr) throw Error("[gguf] " + path().string() + ": missing metadata " + key);
  return *value;
}

std::uint64_t GgufFile::uint_or(const std::string& key, std::uint64_t fallback) const {
  const auto* value = find(key);
  return value == nullptr ? fallback : value->as_uint();
}

double GgufFile::float_or(const std::string& key, double fallback) const {
  const auto* value = find(key);
  return value == nullptr ? fallback : value->as_double();
}

std::string GgufFile::string_or(const std::string& key, const std::string& fallback) const {
  const auto* value = find(key);
  return value == nullptr ? fallback : value->as_string();
}

const TensorInfo* GgufFile::find_tensor(const std::string& name) const {
  auto found = tensor_index_.find(name);
  return found == tensor_index_.end() ? nullptr : &tensors_[found->second];
}

std::span<const std::uint8_t> GgufFile::tensor_bytes(const TensorInfo& tensor) const {
  return file_->bytes().subspan(data_offset_ + tensor.offset, tensor.byte_size);
}

}  // namespace mlx_cpp::gguf
