// Bad checkpoints give one clear error naming the problem, never a crash.
#include <gtest/gtest.h>
#include <mlx/io.h>
#include <mlx/ops.h>

#include <array>
#include <cstdio>
#include <fstream>

#include "golden_case.h"
#include "io/error.h"
#include "io/json_file.h"
#include "model/architectures.h"
#include "model/language_model.h"
#include "model/model_inspection.h"

namespace mlx_cpp {
namespace {
namespace fs = std::filesystem;
namespace mx = mlx::core;

class LoadErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    source_ = testing::GoldenCase::load("llama_q4").model_directory;
    directory_ = fs::path(MLX_CPP_BINARY_DIR) / "load_errors" /
                 ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(directory_);
    fs::create_directories(directory_);
    for (const auto& entry : fs::directory_iterator(source_))
      fs::copy_file(entry.path(), directory_ / entry.path().filename());
  }

  // Loads and returns the error message ("" when the load succeeded).
  std::string load_error() const {
    try {
      load_model(directory_);
    } catch (const Error& error) {
      return error.what();
    }
    return "";
  }

  void edit_config(const std::function<void(nlohmann::json&)>& edit) const {
    auto config = read_json_file(directory_ / "config.json");
    edit(config);
    write_json_file(directory_ / "config.json", config);
  }

  void edit_weights(const std::function<void(std::unordered_map<std::string, mx::array>&)>& edit) {
    auto weights = mx::load_safetensors((directory_ / "model.safetensors").string()).first;
    edit(weights);
    mx::save_safetensors((directory_ / "model.safetensors").string(), weights, {{"format", "mlx"}});
  }

  fs::path source_, directory_;
};

TEST_F(LoadErrors, ValidCopyLoads) {
  EXPECT_EQ(load_error(), "");
}

TEST_F(LoadErrors, MissingDirectory) {
  directory_ /= "nowhere";
  EXPECT_NE(load_error().find("does not exist"), std::string::npos);
}

TEST_F(LoadErrors, MissingConfig) {
  fs::remove(directory_ / "config.json");
  EXPECT_NE(load_error().find("no config.json"), std::string::npos);
}

TEST_F(LoadErrors, MalformedConfigJson) {
  std::ofstream(directory_ / "config.json") << "{\"model_type\": \"llama\", ";
  EXPECT_NE(load_error().find("malformed JSON"), std::string::npos);
}

TEST_F(LoadErrors, UnknownModelTypeListsSupported) {
  edit_config([](auto& config) { config["model_type"] = "mamba"; });
  auto message = load_error();
  EXPECT_NE(message.find("unsupported model_type 'mamba'"), std::string::npos) << message;
  EXPECT_NE(message.find("qwen3"), std::string::npos) << message;
}

TEST_F(LoadErrors, UnknownModelTypeNamesTheClosestSupported) {
  edit_config([](auto& config) { config["model_type"] = "qwen3_vl"; });
  auto message = load_error();
  EXPECT_NE(message.find("(closest supported: qwen3, qwen3_5)"), std::string::npos) << message;
  EXPECT_EQ(closest_model_types("gemma2x").front(), "gemma2");
  EXPECT_EQ(closest_model_types("starcoder"), std::vector<std::string>{"starcoder2"});
  EXPECT_TRUE(closest_model_types("rwkv7").empty());
}

TEST_F(LoadErrors, InspectionOfAGoodCopyNamesItsTierAndUnreadKeys) {
  edit_config([](auto& config) { config["attention_sink_size"] = 4; });
  auto report = inspect_model(directory_);
  EXPECT_TRUE(report.supported);
  EXPECT_EQ(report.tier, "generic dense");
  EXPECT_NE(report.shape.find("3 layers, hidden 64"), std::string::npos) << report.shape;
  EXPECT_EQ(report.unread_config_keys, std::vector<std::string>{"attention_sink_size"});
  EXPECT_FALSE(report.weight_problems) << *report.weight_problems;
  EXPECT_GT(report.parameter_count, 0u);
}

TEST_F(LoadErrors, InspectionReportsTensorsThatDoNotMatch) {
  edit_config([](auto& config) { config["intermediate_size"] = 256; });
  auto report = inspect_model(directory_);
  EXPECT_TRUE(report.supported);
  ASSERT_TRUE(report.weight_problems);
  EXPECT_NE(report.weight_problems->find("mlp.up_proj.weight has shape"), std::string::npos)
      << *report.weight_problems;
}

TEST_F(LoadErrors, InspectionRefusesAnUnknownType) {
  edit_config([](auto& config) { config["model_type"] = "rwkv7"; });
  auto report = inspect_model(directory_);
  EXPECT_FALSE(report.supported);
  EXPECT_TRUE(report.tier.empty());
  EXPECT_NE(report.refusal.find("unsupported model_type 'rwkv7'"), std::string::npos);
}

// Each tier's inspection names what sets its models apart.
TEST(ModelInspection, NamesTheTierAndWhatSetsTheModelApart) {
  const std::vector<std::array<std::string, 3>> cases = {
      {"qwen3_moe_q4", "generic mixture of experts", "2 routed layers of 8 experts (2 per token)"},
      {"lfm2_q4", "generic dense", "2 short-convolution layers of 3 taps"},
      {"qwen3_5_q4", "generic dense", "2 gated DeltaNet layers (4 value heads of 16)"},
      {"gemma4_text_q4", "dedicated",
       "the last 2 layers share earlier keys, per-layer inputs of 16"},
      {"gemma4_text_moe_q4", "dedicated", "8 experts (2 per token) beside each MLP"}};
  for (const auto& [name, tier, shape] : cases) {
    SCOPED_TRACE(name);
    auto report = inspect_model(testing::GoldenCase::load(name).model_directory);
    EXPECT_EQ(report.tier, tier);
    EXPECT_NE(report.shape.find(shape), std::string::npos) << report.shape;
    EXPECT_FALSE(report.weight_problems);
  }
}

// A hybrid's config says which layers attend and how wide the convolution
// is; each way to get that wrong is one clear error.
struct HybridConfigCase {
  const char* source;  // the golden case whose checkpoint is edited
  const char* name;
  std::function<void(nlohmann::json&)> edit;
  const char* error;
};

class HybridConfigErrors : public ::testing::TestWithParam<HybridConfigCase> {};

TEST_P(HybridConfigErrors, AreOneClearError) {
  const auto source = testing::GoldenCase::load(GetParam().source).model_directory;
  const auto directory = fs::path(MLX_CPP_BINARY_DIR) / "load_errors" / "hybrid" / GetParam().name;
  fs::remove_all(directory);
  fs::create_directories(directory);
  for (const auto& entry : fs::directory_iterator(source))
    fs::copy_file(entry.path(), directory / entry.path().filename());
  auto config = read_json_file(directory / "config.json");
  GetParam().edit(config);
  write_json_file(directory / "config.json", config);
  try {
    load_model(directory);
    FAIL() << "loaded";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(GetParam().error), std::string::npos) << error.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Lfm2, HybridConfigErrors,
    ::testing::Values(
        HybridConfigCase{"lfm2_q4", "kernel_of_one_tap", [](auto& c) { c["conv_L_cache"] = 1; },
                         "conv_L_cache must be at least 2"},
        HybridConfigCase{"lfm2_q4", "no_layer_kinds", [](auto& c) { c.erase("layer_types"); },
                         "must say which layers attend"},
        HybridConfigCase{"lfm2_q4", "attention_index_past_the_layers",
                         [](auto& c) {
                           c["full_attn_idxs"] = {1, 7};
                         },
                         "not a layer of 4"},
        HybridConfigCase{"lfm2_q4", "layer_types_of_another_length",
                         [](auto& c) {
                           c["layer_types"] = {"conv", "full_attention"};
                         },
                         "layer_types must list one type per layer"},
        HybridConfigCase{"lfm2_q4", "block_dim_not_hidden", [](auto& c) { c["block_dim"] = 32; },
                         "differs from hidden_size"},
        HybridConfigCase{"lfm2_q4", "no_feed_forward_width",
                         [](auto& c) {
                           c.erase("block_ff_dim");
                           c.erase("intermediate_size");
                         },
                         "intermediate_size"}),
    [](const auto& info) { return std::string(info.param.name); });

INSTANTIATE_TEST_SUITE_P(
    Qwen3_5, HybridConfigErrors,
    ::testing::Values(HybridConfigCase{"qwen3_5_q4", "experts_without_a_count_per_token",
                                       [](auto& c) { c["num_experts"] = 8; },
                                       "num_experts_per_tok"},
                      HybridConfigCase{"qwen3_5_q4", "value_heads_not_a_multiple",
                                       [](auto& c) { c["linear_num_value_heads"] = 3; },
                                       "is not a multiple of linear_num_key_heads"},
                      HybridConfigCase{"qwen3_5_q4", "kernel_of_one_tap",
                                       [](auto& c) { c["linear_conv_kernel_dim"] = 1; },
                                       "linear_conv_kernel_dim must be at least 2"},
                      HybridConfigCase{"qwen3_5_q4", "no_attention_interval",
                                       [](auto& c) { c["full_attention_interval"] = 0; },
                                       "'full_attention_interval' must be a positive integer"},
                      HybridConfigCase{"qwen3_5_q4", "state_of_another_width",
                                       [](auto& c) { c["linear_value_head_dim"] = 32; },
                                       "linear_attn"}),
    [](const auto& info) { return std::string(info.param.name); });

INSTANTIATE_TEST_SUITE_P(
    Qwen3Next, HybridConfigErrors,
    ::testing::Values(
        HybridConfigCase{"qwen3_next_q4", "no_experts", [](auto& c) { c["num_experts"] = 0; },
                         "'num_experts' must be a positive integer"},
        HybridConfigCase{"qwen3_next_q4", "dense_layers_not_a_list",
                         [](auto& c) { c["mlp_only_layers"] = 0; },
                         "mlp_only_layers must be a list"},
        HybridConfigCase{"qwen3_next_q4", "no_sparse_step",
                         [](auto& c) { c.erase("decoder_sparse_step"); }, "decoder_sparse_step"},
        // in_proj_qkvz's rows no longer split per key head.
        HybridConfigCase{"qwen3_next_q4", "fused_rows_of_another_count",
                         [](auto& c) { c["linear_key_head_dim"] = 16; }, "rows to split"}),
    [](const auto& info) { return std::string(info.param.name); });

// Gemma 4's dedicated graph reads its own config: each inconsistency is one
// clear error, before any tensor is read.
INSTANTIATE_TEST_SUITE_P(
    Gemma4, HybridConfigErrors,
    ::testing::Values(HybridConfigCase{"gemma4_text_q4", "every_layer_shared",
                                       [](auto& c) { c["num_kv_shared_layers"] = 6; },
                                       "must leave at least one of the 6 layers its own keys"},
                      HybridConfigCase{"gemma4_text_q4", "shared_layer_without_a_source",
                                       [](auto& c) {
                                         c["layer_types"] = {
                                             "sliding_attention", "sliding_attention",
                                             "sliding_attention", "sliding_attention",
                                             "full_attention",    "full_attention"};
                                       },
                                       "shared layer 4 has no earlier full-attention layer"},
                      HybridConfigCase{"gemma4_text_q4", "unknown_layer_type",
                                       [](auto& c) {
                                         c["layer_types"] = {
                                             "sliding_attention", "sliding_attention",
                                             "linear_attention",  "sliding_attention",
                                             "sliding_attention", "full_attention"};
                                       },
                                       "layer_types[2] is \"linear_attention\""},
                      HybridConfigCase{"gemma4_text_q4", "key_heads_not_dividing",
                                       [](auto& c) { c["num_key_value_heads"] = 3; },
                                       "key heads do not divide its 2 heads"},
                      HybridConfigCase{"gemma4_text_q4", "negative_per_layer_width",
                                       [](auto& c) { c["hidden_size_per_layer_input"] = -1; },
                                       "hidden_size_per_layer_input must be an integer from 0"},
                      HybridConfigCase{"gemma4_text_moe_q4", "more_experts_per_token_than_experts",
                                       [](auto& c) { c["top_k_experts"] = 9; },
                                       "top_k_experts exceeds num_experts"},
                      HybridConfigCase{"gemma4_text_moe_q4", "experts_without_a_width",
                                       [](auto& c) { c.erase("moe_intermediate_size"); },
                                       "moe_intermediate_size"}),
    [](const auto& info) { return std::string(info.param.name); });

// MLX's CPU gather_mm multiplies float32 only: bfloat16 dense experts are
// refused at load, naming the tensor and the way out.
TEST(MixtureOfExpertsLoad, DenseBfloat16ExpertsAreRefusedAtLoad) {
  const auto source = testing::GoldenCase::load("mixtral_f32").model_directory;
  const auto directory = fs::path(MLX_CPP_BINARY_DIR) / "load_errors" / "bf16_dense_experts";
  fs::remove_all(directory);
  fs::create_directories(directory);
  for (const auto& entry : fs::directory_iterator(source))
    fs::copy_file(entry.path(), directory / entry.path().filename());
  auto weights = mx::load_safetensors((directory / "model.safetensors").string()).first;
  for (auto& [name, tensor] : weights) tensor = mx::astype(tensor, mx::bfloat16);
  mx::save_safetensors((directory / "model.safetensors").string(), weights, {{"format", "mlx"}});
  try {
    load_model(directory);
    FAIL() << "bfloat16 dense experts loaded";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("switch_mlp.gate_proj.weight is bfloat16: dense experts need float32"),
              std::string::npos)
        << message;
  }
}

TEST_F(LoadErrors, MissingWeightFiles) {
  fs::remove(directory_ / "model.safetensors");
  EXPECT_NE(load_error().find("no model*.safetensors"), std::string::npos);
}

TEST_F(LoadErrors, TruncatedSafetensors) {
  const auto path = directory_ / "model.safetensors";
  fs::resize_file(path, fs::file_size(path) / 2);
  auto message = load_error();
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;
}

TEST_F(LoadErrors, CorruptedSafetensorsHeader) {
  std::fstream stream(directory_ / "model.safetensors",
                      std::ios::in | std::ios::out | std::ios::binary);
  stream.seekp(8);
  stream.write("#garbage#", 9);
  stream.close();
  auto message = load_error();
  EXPECT_NE(message.find("corrupted header"), std::string::npos) << message;
}

TEST_F(LoadErrors, ImpossibleHeaderLength) {
  std::fstream stream(directory_ / "model.safetensors",
                      std::ios::in | std::ios::out | std::ios::binary);
  const char huge[8] = {'\xff', '\xff', '\xff', '\xff', '\xff', '\xff', '\x00', '\x00'};
  stream.write(huge, 8);
  stream.close();
  EXPECT_NE(load_error().find("header length"), std::string::npos);
}

TEST_F(LoadErrors, ShapeMismatchNamesTensors) {
  edit_config([](auto& config) { config["vocab_size"] = 600; });
  auto message = load_error();
  EXPECT_NE(message.find("model.embed_tokens.weight has shape [512, 8], expected [600, 8]"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("model.embed_tokens.scales"), std::string::npos) << message;
}

TEST_F(LoadErrors, DtypeMismatchNamesTensor) {
  edit_weights([](auto& weights) {
    auto& norm = weights.at("model.norm.weight");
    norm = mx::astype(norm, mx::int32);
  });
  auto message = load_error();
  EXPECT_NE(message.find("model.norm.weight has dtype int32"), std::string::npos) << message;
}

TEST_F(LoadErrors, MissingAndUnusedTensorsAreAllNamed) {
  edit_weights([](auto& weights) {
    weights.erase("model.layers.1.post_attention_layernorm.weight");
    weights.insert_or_assign("model.layers.1.extra.weight", mx::zeros({4}));
  });
  auto message = load_error();
  EXPECT_NE(message.find("missing model.layers.1.post_attention_layernorm.weight"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("unused model.layers.1.extra.weight"), std::string::npos) << message;
}

TEST_F(LoadErrors, MissingQuantizedProjectionIsNamedByTheAudit) {
  edit_weights([](auto& weights) {
    for (const char* part : {"weight", "scales", "biases"})
      weights.erase(std::string("model.layers.0.mlp.down_proj.") + part);
  });
  auto message = load_error();
  EXPECT_NE(message.find("missing model.layers.0.mlp.down_proj.weight"), std::string::npos)
      << message;
}

TEST_F(LoadErrors, ScalesAndBiasesOfAnotherDtypeAreALoadError) {
  edit_weights([](auto& weights) {
    auto& scales = weights.at("model.layers.0.mlp.down_proj.scales");
    scales = mx::astype(scales, mx::float32);
  });
  auto message = load_error();
  EXPECT_NE(message.find("model.layers.0.mlp.down_proj.scales has dtype float32"),
            std::string::npos)
      << message;
}

// A llama checkpoint relabelled as another model_type of the table: the
// same tensors, read through that type's rules.
TEST_F(LoadErrors, IgnoredPrefixesAreTheOnlyUnusedTensorsAllowed) {
  edit_config([](auto& config) {
    config["model_type"] = "mimo";
    config["num_key_value_heads"] = 2;
  });
  edit_weights([](auto& weights) {
    weights.insert_or_assign("model.mtp_layers.0.proj.weight", mx::zeros({4}));
  });
  auto message = load_error();
  // mimo reads q/k/v biases llama_q4 does not have; the MTP tensor is not named.
  EXPECT_NE(message.find("missing model.layers.0.self_attn.q_proj.bias"), std::string::npos)
      << message;
  EXPECT_EQ(message.find("mtp_layers"), std::string::npos) << message;
}

TEST_F(LoadErrors, RenamedTensorsThatCollideAreAnError) {
  // exaone reads transformer.h.N.* as model.layers.N.*: a checkpoint with
  // both spellings of one tensor names the clash.
  edit_config([](auto& config) {
    config["model_type"] = "exaone";
    config["num_layers"] = config["num_hidden_layers"];
    config["layer_norm_epsilon"] = config["rms_norm_eps"];
  });
  edit_weights([](auto& weights) {
    weights.insert_or_assign("transformer.h.0.ln_1.weight",
                             weights.at("model.layers.0.input_layernorm.weight"));
  });
  auto message = load_error();
  EXPECT_NE(message.find("two tensors are both read as 'model.layers.0.input_layernorm.weight'"),
            std::string::npos)
      << message;
}

TEST_F(LoadErrors, AFusedProjectionOfTheWrongSizeIsNamed) {
  edit_config([](auto& config) {
    config["model_type"] = "glm4";
    config["head_dim"] = 16;
    config["attention_bias"] = false;
    config["partial_rotary_factor"] = 0.5;
  });
  edit_weights([](auto& weights) {
    weights.insert_or_assign("model.layers.0.mlp.gate_up_proj.weight", mx::zeros({100, 64}));
  });
  auto message = load_error();
  EXPECT_NE(message.find("model.layers.0.mlp.gate_up_proj.weight has [100, 64], expected 256 rows "
                         "to split"),
            std::string::npos)
      << message;
}

TEST_F(LoadErrors, NoRopeLayerFlagsMustCoverEveryLayer) {
  edit_config([](auto& config) {
    config["model_type"] = "smollm3";
    config["no_rope_layers"] = {1, 0};  // llama_q4 has 3 layers
  });
  auto message = load_error();
  EXPECT_NE(message.find("no_rope_layers must list one flag per layer"), std::string::npos)
      << message;
  edit_config([](auto& config) { config["no_rope_layers"] = {1, 0, 1}; });
  EXPECT_EQ(load_error(), "");
}

TEST_F(LoadErrors, BadQuantizationBlocks) {
  edit_config([](auto& config) { config["quantization"]["bits"] = 7; });
  EXPECT_NE(load_error().find("7-bit quantization is not supported"), std::string::npos);
  edit_config([](auto& config) {
    config["quantization"]["bits"] = 4;
    config["quantization"]["group_size"] = "sixty-four";
  });
  EXPECT_NE(load_error().find("'group_size' must be an integer"), std::string::npos);
  edit_config([](auto& config) {
    config["quantization"]["group_size"] = 64;
    config["quantization"]["mode"] = "mxfp4";
  });
  EXPECT_NE(load_error().find("mode 'mxfp4' is not supported"), std::string::npos);
  edit_config([](auto& config) { config["quantization"] = "yes"; });
  EXPECT_NE(load_error().find("'quantization' must be an object"), std::string::npos);
}

// Runs an mlx-cpp command line, stderr with stdout: {exit status, output}.
std::pair<int, std::string> run_cli(const std::string& arguments) {
  auto command = std::string(MLX_CPP_BINARY_DIR) + "/mlx-cpp " + arguments + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return {-1, "popen failed"};
  std::string output;
  char buffer[256];
  while (fgets(buffer, sizeof buffer, pipe)) output += buffer;
  const int status = pclose(pipe);
  return {WEXITSTATUS(status), output};
}

TEST_F(LoadErrors, CommandLineReportsOneLineAndFails) {
  edit_config([](auto& config) { config["model_type"] = "mamba"; });
  auto [status, output] = run_cli("generate --model " + directory_.string() + " --prompt hi");
  EXPECT_EQ(status, 1) << output;
  EXPECT_EQ(output.rfind("error: unsupported model_type 'mamba'", 0), 0u) << output;
  EXPECT_EQ(std::count(output.begin(), output.end(), '\n'), 1) << output;
}

TEST_F(LoadErrors, InspectCommandSaysSupportedOrWhyNot) {
  auto [status, output] = run_cli("inspect " + directory_.string());
  EXPECT_EQ(status, 0) << output;
  EXPECT_NE(output.find("supported    yes, by the generic dense graph"), std::string::npos)
      << output;
  edit_config([](auto& config) { config["model_type"] = "mamba"; });
  std::tie(status, output) = run_cli("inspect " + directory_.string());
  EXPECT_EQ(status, 1) << output;
  EXPECT_NE(output.find("supported    no: unsupported model_type 'mamba'"), std::string::npos)
      << output;
}

}  // namespace
}  // namespace mlx_cpp
