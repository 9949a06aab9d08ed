// Hostile templates: each one used to crash the process (stack overflow,
// SIGFPE), hang it or take gigabytes. Each must now end at once with a
// one-line template error, and the budget must leave real templates alone.
#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "io/error.h"
#include "template/chat_template.h"
#include "template/render_interruption.h"

namespace mlx_cpp {
namespace {

using Json = nlohmann::ordered_json;

std::string repeated(const std::string& piece, int times) {
  std::string out;
  for (int i = 0; i < times; ++i) out += piece;
  return out;
}

// The error a template gives, or "" when it renders.
std::string error_of(const std::string& source, TemplateLimits limits = {}) {
  try {
    ChatTemplate(source, limits).render_raw(Json::object());
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

void expect_error(const std::string& source, const std::string& expected,
                  TemplateLimits limits = {}) {
  const std::string message = error_of(source, limits);
  EXPECT_NE(message.find(expected), std::string::npos)
      << "wanted '" << expected << "', got '" << message << "' for " << source.substr(0, 80);
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_EQ(message.rfind("template error at line ", 0), 0u) << message;
}

TEST(TemplateBudget, LongOperatorChainsAreRefusedWhenParsed) {
  const std::string too_tall = "expression nested deeper than 256 levels";
  expect_error("{{ 0" + repeated(" + 1", 20000) + " }}", too_tall);
  expect_error("{{ 'a'" + repeated(" ~ 'b'", 20000) + " }}", too_tall);
  expect_error("{{ 'a'" + repeated(" | string", 20000) + " }}", too_tall);
  expect_error("{{ x" + repeated(".a", 20000) + " }}", too_tall);
  expect_error("{{ x" + repeated("[0]", 20000) + " }}", too_tall);
  expect_error("{{ range" + repeated("(1)", 20000) + " }}", too_tall);
  expect_error("{{ f(a=0" + repeated(" + 1", 300) + ") }}", too_tall);
  const std::string too_deep = "nested too deeply";
  expect_error("{{ " + repeated("not ", 30000) + "1 }}", too_deep);
  expect_error("{{ 1 " + repeated("if false else 1 ", 20000) + "}}", too_deep);
  expect_error("{% if false %}" + repeated("{% elif false %}", 20000) + "{% endif %}", too_deep);
  // What real templates write stays well inside.
  EXPECT_EQ(error_of("{{ 0" + repeated(" + 1", 200) + " }}"), "");
  // Comparison chains are one node, however long.
  EXPECT_EQ(ChatTemplate("{{ 1" + repeated(" == 1", 20000) + " }}").render_raw(Json::object()),
            "True");
}

TEST(TemplateBudget, StepsBoundWorkThatPrintsNothing) {
  TemplateLimits limits;
  limits.max_steps = 100000;
  expect_error(
      "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}"
      "{{ f(60) }}",
      "template takes more than 100000 steps", limits);
  // The default bounds end the same macro too: its steps, or its time on a
  // slow (sanitized) build.
  expect_error(
      "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}"
      "{{ f(60) }}",
      "template takes ");
}

TEST(TemplateBudget, NestingBoundsRecursionWhileRendering) {
  TemplateLimits limits;
  limits.max_nesting = 50;
  expect_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
               "template nests deeper than 50 levels", limits);
}

TEST(TemplateBudget, WallTimeIsBounded) {
  TemplateLimits limits;
  limits.max_seconds = 0.0;
  limits.max_steps = SIZE_MAX;
  expect_error("{% for i in range(100000) %}{{ i }}{% endfor %}", "template takes longer than",
               limits);
}

TEST(TemplateBudget, AnInterruptionStopsTheRenderOnItsThread) {
  const std::string busy = "{% for i in range(100000) %}{{ i }}{% endfor %}";
  int asked = 0;
  {
    // Says stop on its third question: the render has run a while by then.
    jinja::RenderInterruption interruption([&asked] { return ++asked >= 3; }, "nobody waits");
    expect_error(busy, "the render was stopped: nobody waits");
    EXPECT_EQ(asked, 3);
    // An inner interruption that says go on leaves the outer one heard.
    jinja::RenderInterruption go_on([] { return false; }, "never");
    expect_error(busy, "the render was stopped: nobody waits");
  }
  // Gone with its scope: the same render ends, and nothing asks.
  const int questions = asked;
  EXPECT_EQ(error_of(busy), "");
  EXPECT_EQ(asked, questions);
  // Another thread's renders do not hear it.
  jinja::RenderInterruption here([] { return true; }, "this thread only");
  std::string elsewhere = "not run";
  std::thread([&] { elsewhere = error_of(busy); }).join();
  EXPECT_EQ(elsewhere, "");
}

TEST(TemplateBudget, NamespacesCannotHoldThemselves) {
  expect_error("{% set ns = namespace(a=1) %}{% set ns.a = ns %}{{ ns }}",
               "a namespace cannot hold itself");
  expect_error(
      "{% set ns = namespace(a=1) %}{% set other = namespace(b=[ns]) %}"
      "{% set ns.a = {'x': other} %}",
      "a namespace cannot hold itself");
  // Two namespaces may still refer to one another in one direction.
  EXPECT_EQ(error_of("{% set a = namespace(x=1) %}{% set b = namespace(y=a) %}{{ b.y.x }}"), "");
}

TEST(TemplateBudget, ContainersNestBoundedly) {
  expect_error(
      "{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = [ns.l] %}"
      "{% endfor %}",
      "lists and dicts nest deeper than 512 levels");
}

TEST(TemplateBudget, BigResultsAreRefusedBeforeTheyAreBuilt) {
  const std::string refused = "template builds more than 268435456 bytes";
  for (const std::string source : {
           "{{ 'x' * 10000000000 }}",
           "{{ ([1] * 100000000) | length }}",
           "{{ '%999999999s' % 'a' }}",
           "{{ '%999999999d' % 1 }}",
           "{{ '%999999999.2f' % 1.5 }}",
           "{{ 'a' | center(10000000000) }}",
           "{{ 'a'.center(10000000000) }}",
           "{{ ('a\n' * 1000000) | indent(100000) }}",
           "{{ [[[[1]]]] | tojson(indent=100000000) }}",
           "{{ [1] | slice(10000000000) | length }}",
           "{{ [1] | batch(10000000000, 0) | length }}",
           "{{ ('x' * 10000000) | replace('', 'y' * 1000) | length }}",
           "{% set a = ['x' * 1000000] * 100 %}{{ a | join('') | length }}{{ a | join('') | length "
           "}}"
           "{{ a | join('') | length }}",
           "{{ ('{0}' * 100000).format('x' * 10000) | length }}",
           "{% for c in 'x' * 100000000 %}{% endfor %}",
       }) {
    expect_error(source, refused);
  }
}

TEST(TemplateBudget, SharedListsCannotPrintWithoutBound) {
  // 10^9 items printed from 3,000 stored: the text is checked as it grows.
  const std::string shared =
      "{% set a = [1] * 1000 %}{% set b = [a] * 1000 %}{% set c = [b] * 1000 %}";
  TemplateLimits limits;
  limits.max_built_bytes = 16u << 20;
  expect_error(shared + "{{ c | tojson | length }}", "bytes of strings and lists", limits);
  expect_error(shared + "{{ (c ~ '') | length }}", "bytes of strings and lists", limits);
  expect_error(shared + "{{ c }}", "bytes of strings and lists", limits);
}

TEST(TemplateBudget, RepeatedCopiesAddUp) {
  TemplateLimits limits;
  limits.max_built_bytes = 1u << 20;
  // Each iteration builds a new, longer list: quadratic in the loop.
  expect_error(
      "{% set ns = namespace(l=[]) %}{% for i in range(10000) %}{% set ns.l = ns.l + ['x'] %}"
      "{% endfor %}",
      "template builds more than 1048576 bytes", limits);
  // A string copied into a list counts once per copy.
  expect_error("{% set s = 'x' * 100000 %}{% set l = [s, s, s, s, s, s, s, s, s, s, s] %}",
               "template builds more than 1048576 bytes", limits);
}

TEST(TemplateBudget, HugeIndexesInFormatFindNothing) {
  expect_error("{{ '{99999999999999999999999}'.format(1) }}", "no argument for field");
}

TEST(TemplateBudget, OrdinaryRenderingFitsEasily) {
  // A chat of 2,000 messages through a template in the usual style.
  Json messages = Json::array();
  for (int i = 0; i < 2000; ++i)
    messages.push_back({{"role", i % 2 ? "assistant" : "user"},
                        {"content", "message " + std::to_string(i) + " " + std::string(200, 'x')}});
  ChatTemplate chat_template(
      "{%- set ns = namespace(count=0) -%}"
      "{%- for message in messages -%}{%- set ns.count = ns.count + 1 -%}"
      "<|{{ message['role'] }}|>{{ message['content'] | trim }}\n{%- endfor -%}"
      "{{ ns.count }}{{ messages | tojson | length > 0 }}");
  const std::string text = chat_template.render(Json{{"messages", messages}});
  EXPECT_NE(text.find("2000True"), std::string::npos);
}

}  // namespace
}  // namespace mlx_cpp
