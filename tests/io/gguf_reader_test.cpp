// GGUF parsing: metadata of every value type against gguf.GGUFReader, and
// hand-crafted truncated / hostile files that must fail with a clear Error.
#include <gtest/gtest.h>

#include "io/error.h"
#include "io/gguf/gguf_file.h"
#include "tests/io/gguf_test_support.h"

namespace mlx_cpp::gguf {
namespace {

using testing::ByteBuilder;

TEST(GgufReader, MetadataMatchesGgufPackage) {
  auto manifest = testing::read_manifest(testing::synthetic_dir());
  ASSERT_FALSE(manifest.is_null()) << "missing goldens: run the oracle_gguf_synthetic fixture";
  ASSERT_EQ(manifest["metadata_files"].size(), 2u);
  for (const auto& expected : manifest["metadata_files"]) {
    GgufFile file(testing::synthetic_dir() / expected["gguf"].get<std::string>());
    EXPECT_EQ(file.version(), expected["version"].get<std::uint32_t>());
    EXPECT_EQ(file.alignment(), expected["alignment"].get<std::uint64_t>());
    EXPECT_EQ(file.data_offset(), expected["data_offset"].get<std::uint64_t>());
    EXPECT_EQ(file.tensors().size(), expected["tensor_count"].get<std::size_t>());
    EXPECT_EQ(file.metadata().size(), expected["metadata"].size());
    for (const auto& [key, value] : expected["metadata"].items()) {
      const auto* actual = file.find(key);
      ASSERT_NE(actual, nullptr) << key;
      EXPECT_EQ(actual->to_json(), value) << key;
    }
  }
}

// A minimal valid header: magic, version, tensor count, metadata count.
ByteBuilder header(std::uint32_t version, std::uint64_t tensors, std::uint64_t metadata) {
  ByteBuilder builder;
  builder.put<std::uint32_t>(0x46554747).put(version).put(tensors).put(metadata);
  return builder;
}

// One tensor info: name, dims, type, offset.
void tensor_info(ByteBuilder& builder, const std::string& name, std::vector<std::uint64_t> dims,
                 std::uint32_t type, std::uint64_t offset) {
  builder.string(name).put<std::uint32_t>(static_cast<std::uint32_t>(dims.size()));
  for (auto dim : dims) builder.put(dim);
  builder.put(type).put(offset);
}

void expect_error(ByteBuilder& builder, const std::string& name, const std::string& fragment) {
  auto path = builder.write(name);
  try {
    GgufFile file(path);
    ADD_FAILURE() << name << ": expected an Error mentioning '" << fragment << "'";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos)
        << name << ": " << error.what();
  }
}

TEST(GgufReader, ValidCraftedFileParses) {
  auto builder = header(3, 1, 1);
  builder.string("general.architecture").put<std::uint32_t>(8).string("llama");
  tensor_info(builder, "w", {32, 2}, 0, 0);
  builder.pad_to(32).zeros(32 * 2 * 4);
  GgufFile file(builder.write("valid.gguf"));
  ASSERT_EQ(file.tensors().size(), 1u);
  EXPECT_EQ(file.tensors()[0].shape(), (std::vector<int>{2, 32}));
  EXPECT_EQ(file.tensor_bytes(file.tensors()[0]).size(), 256u);
  EXPECT_EQ(file.require("general.architecture").as_string(), "llama");
}

TEST(GgufReader, RejectsEmptyAndForeignFiles) {
  ByteBuilder empty;
  expect_error(empty, "empty.gguf", "truncated");
  ByteBuilder foreign;
  foreign.put<std::uint64_t>(0x1234567812345678).zeros(32);
  expect_error(foreign, "foreign.gguf", "bad magic");
}

TEST(GgufReader, RejectsUnsupportedVersions) {
  auto v1 = header(1, 0, 0);
  expect_error(v1, "v1.gguf", "version 1");
  auto big_endian = header(0x03000000, 0, 0);
  expect_error(big_endian, "big_endian.gguf", "big-endian");
  auto future = header(9, 0, 0);
  expect_error(future, "future.gguf", "unsupported GGUF version 9");
}

TEST(GgufReader, RejectsHugeCounts) {
  auto tensors = header(3, UINT64_MAX, 0);
  expect_error(tensors, "huge_tensor_count.gguf", "tensor count");
  auto metadata = header(3, 0, 1ull << 60);
  expect_error(metadata, "huge_metadata_count.gguf", "metadata count");
  auto array = header(3, 0, 1);
  array.string("k").put<std::uint32_t>(9).put<std::uint32_t>(4).put<std::uint64_t>(1ull << 61);
  expect_error(array, "huge_array.gguf", "cannot fit");
}

TEST(GgufReader, RejectsStringsPastEndOfFile) {
  auto key = header(3, 0, 1);
  key.put<std::uint64_t>(1000).zeros(10);
  expect_error(key, "long_key.gguf", "metadata key has length 1000");
  auto value = header(3, 0, 1);
  value.string("k").put<std::uint32_t>(8).put<std::uint64_t>(UINT64_MAX);
  expect_error(value, "long_value.gguf", "string value has length");
}

TEST(GgufReader, RejectsTruncatedScalarsAndBadTypes) {
  auto truncated = header(3, 0, 1);
  truncated.string("k").put<std::uint32_t>(10).put<std::uint16_t>(1);
  expect_error(truncated, "truncated_uint64.gguf", "truncated while reading uint64");
  auto bad_type = header(3, 0, 1);
  bad_type.string("k").put<std::uint32_t>(13).zeros(8);
  expect_error(bad_type, "bad_value_type.gguf", "not a GGUF value type");
  auto bad_bool = header(3, 0, 1);
  bad_bool.string("k").put<std::uint32_t>(7).put<std::uint8_t>(7).zeros(8);
  expect_error(bad_bool, "bad_bool.gguf", "neither 0 nor 1");
}

TEST(GgufReader, RejectsDeeplyNestedArrays) {
  auto nested = header(3, 0, 1);
  nested.string("k").put<std::uint32_t>(9);
  for (int depth = 0; depth < 20; ++depth) nested.put<std::uint32_t>(9).put<std::uint64_t>(1);
  nested.zeros(64);
  expect_error(nested, "nested.gguf", "nested deeper");
}

TEST(GgufReader, RejectsBadTensorInfos) {
  auto dims = header(3, 1, 0);
  tensor_info(dims, "w", {1, 1, 1, 1, 1}, 0, 0);
  expect_error(dims, "five_dims.gguf", "5 dimensions");
  auto zero = header(3, 1, 0);
  tensor_info(zero, "w", {0}, 0, 0);
  expect_error(zero, "zero_dim.gguf", "dimension 0 is 0");
  auto overflow = header(3, 1, 0);
  tensor_info(overflow, "w", {1u << 30, 1u << 30, 1u << 30, 1u << 30}, 0, 0);
  overflow.zeros(64);
  expect_error(overflow, "overflow.gguf", "overflows");
  auto type = header(3, 1, 0);
  tensor_info(type, "w", {32}, 77, 0);
  type.zeros(64);
  expect_error(type, "bad_type.gguf", "unknown type 77");
  auto block = header(3, 1, 0);
  tensor_info(block, "w", {33}, 2, 0);
  block.zeros(64);
  expect_error(block, "partial_block.gguf", "not a multiple of the Q4_0 block size 32");
}

TEST(GgufReader, RejectsOffsetsPastEndOfFile) {
  auto past = header(3, 1, 0);
  tensor_info(past, "w", {32}, 0, 1ull << 40);
  past.pad_to(32).zeros(128);
  expect_error(past, "offset_past_end.gguf", "past the end");
  auto wrapping = header(3, 1, 0);
  tensor_info(wrapping, "w", {32}, 0, UINT64_MAX - 31);
  wrapping.pad_to(32).zeros(128);
  expect_error(wrapping, "offset_wraps.gguf", "past the end");
  auto short_data = header(3, 1, 0);
  tensor_info(short_data, "w", {64}, 0, 0);
  short_data.pad_to(32).zeros(100);  // needs 256 bytes
  expect_error(short_data, "short_data.gguf", "past the end");
  auto misaligned = header(3, 1, 0);
  tensor_info(misaligned, "w", {8}, 0, 4);
  misaligned.pad_to(32).zeros(64);
  expect_error(misaligned, "misaligned.gguf", "not aligned");
}

TEST(GgufReader, RejectsBadAlignmentAndDuplicates) {
  auto alignment = header(3, 0, 1);
  alignment.string("general.alignment").put<std::uint32_t>(4).put<std::uint32_t>(48);
  expect_error(alignment, "alignment.gguf", "not a power of two");
  auto keys = header(3, 0, 2);
  keys.string("k").put<std::uint32_t>(4).put<std::uint32_t>(1);
  keys.string("k").put<std::uint32_t>(4).put<std::uint32_t>(2);
  expect_error(keys, "duplicate_key.gguf", "duplicate key k");
  auto tensors = header(3, 2, 0);
  tensor_info(tensors, "w", {8}, 0, 0);
  tensor_info(tensors, "w", {8}, 0, 32);
  tensors.pad_to(32).zeros(64);
  expect_error(tensors, "duplicate_tensor.gguf", "duplicate tensor w");
}

TEST(GgufReader, EveryTruncationOfAValidFileFailsCleanly) {
  auto builder = header(3, 1, 2);
  builder.string("general.architecture").put<std::uint32_t>(8).string("llama");
  builder.string("a").put<std::uint32_t>(9).put<std::uint32_t>(8).put<std::uint64_t>(2);
  builder.string("x").string("yz");
  tensor_info(builder, "w", {32}, 8, 0);
  builder.pad_to(32).zeros(34);
  auto full = builder.bytes();
  for (std::size_t length = 0; length < full.size(); ++length) {
    ByteBuilder prefix;
    prefix.bytes().assign(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(length));
    EXPECT_THROW(GgufFile(prefix.write("prefix.gguf")), Error) << "length " << length;
  }
}

}  // namespace
}  // namespace mlx_cpp::gguf
