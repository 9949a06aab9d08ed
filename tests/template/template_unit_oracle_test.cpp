// One small template per statement, filter, test, method and whitespace
// rule; jinja2 (configured as transformers configures it) wrote the
// expected output or error of each.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "golden_reader.h"
#include "io/error.h"
#include "template/chat_template.h"

namespace mlx_cpp {
namespace {

TEST(TemplateUnits, EveryCaseMatchesJinja2) {
  auto path = std::filesystem::path(MLX_CPP_GOLDENS) / "template_units" / "cases.json";
  nlohmann::ordered_json cases = testing::read_golden(path);
  ASSERT_TRUE(cases.is_array());
  EXPECT_GT(cases.size(), 100u);
  for (const auto& test_case : cases) {
    const std::string name = test_case["name"].get<std::string>();
    const std::string source = test_case["template"].get<std::string>();
    try {
      std::string rendered = ChatTemplate(source).render_raw(test_case["variables"]);
      if (test_case.contains("error")) {
        ADD_FAILURE() << name << ": jinja2 failed (" << test_case["error"].get<std::string>()
                      << ") but we rendered: " << rendered;
      } else {
        EXPECT_EQ(rendered, test_case["output"].get<std::string>())
            << name << ": template " << source;
      }
    } catch (const Error& error) {
      EXPECT_TRUE(test_case.contains("error"))
          << name << ": we failed: " << error.what() << "\n  template: " << source;
    }
  }
}

}  // namespace
}  // namespace mlx_cpp
