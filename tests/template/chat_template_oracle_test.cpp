// Real chat templates: our render must equal transformers' byte for byte,
// and must fail exactly where transformers fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "golden_reader.h"
#include "io/error.h"
#include "template/chat_template.h"

namespace mlx_cpp {
namespace {

const std::filesystem::path kGoldens = std::filesystem::path(MLX_CPP_GOLDENS) / "chat_templates";

// Where two renders first differ, with some text around it.
std::string describe_difference(const std::string& expected, const std::string& actual) {
  size_t at = 0;
  while (at < expected.size() && at < actual.size() && expected[at] == actual[at]) ++at;
  size_t from = at > 80 ? at - 80 : 0;
  return "first difference at byte " + std::to_string(at) + "\n  expected: ..." +
         nlohmann::json(expected.substr(from, 200)).dump() + "\n  actual:   ..." +
         nlohmann::json(actual.substr(from, 200)).dump();
}

void check_golden(const std::filesystem::path& golden_path) {
  nlohmann::ordered_json golden = testing::read_golden(golden_path);
  if (golden.is_null()) return;
  std::string source = testing::read_text_file(golden["template_file"].get<std::string>());
  std::unique_ptr<ChatTemplate> chat_template;
  try {
    chat_template = std::make_unique<ChatTemplate>(source);
  } catch (const Error& error) {
    for (const auto& test_case : golden["cases"]) {
      EXPECT_TRUE(test_case.contains("error"))
          << test_case["name"]
          << ": transformers rendered it but we failed to parse: " << error.what();
    }
    return;
  }
  for (const auto& test_case : golden["cases"]) {
    SCOPED_TRACE(test_case["name"].get<std::string>());
    try {
      std::string rendered = chat_template->render(test_case["context"]);
      if (test_case.contains("error")) {
        ADD_FAILURE() << "transformers failed (" << test_case["error"].get<std::string>()
                      << ") but we rendered:\n"
                      << rendered;
      } else {
        std::string expected = test_case["output"].get<std::string>();
        EXPECT_TRUE(rendered == expected) << describe_difference(expected, rendered);
      }
    } catch (const Error& error) {
      EXPECT_TRUE(test_case.contains("error")) << "we failed: " << error.what();
    }
  }
}

std::vector<std::string> shared_template_names() {
  std::vector<std::string> names;
  std::filesystem::path directory = std::filesystem::path(MLX_CPP_TESTDATA) / "chat-templates";
  std::error_code ignored;
  for (const auto& entry : std::filesystem::directory_iterator(directory, ignored)) {
    if (entry.path().extension() == ".jinja") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class SharedTemplate : public ::testing::TestWithParam<std::string> {};

TEST_P(SharedTemplate, MatchesTransformers) {
  check_golden(kGoldens / (GetParam() + ".json"));
}

std::string parameter_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(ChatTemplates, SharedTemplate,
                         ::testing::ValuesIn(shared_template_names()), parameter_name);

// Every shared template has a golden, and templates added to the oracle
// with --template-file / --template-dir (no test of their own above) match.
TEST(ChatTemplates, IndexCoversSharedAndExtraTemplates) {
  nlohmann::ordered_json index = testing::read_golden(kGoldens / "index.json");
  ASSERT_TRUE(index.is_array());
  std::vector<std::string> shared = shared_template_names();
  for (const auto& name : shared) {
    EXPECT_NE(std::find(index.begin(), index.end(), name + ".json"), index.end()) << name;
  }
  for (const auto& entry : index) {
    std::string name = entry.get<std::string>();
    std::string stem = name.substr(0, name.size() - 5);
    if (std::find(shared.begin(), shared.end(), stem) != shared.end()) continue;
    SCOPED_TRACE(name);
    check_golden(kGoldens / name);
  }
}

}  // namespace
}  // namespace mlx_cpp
