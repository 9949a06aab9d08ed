// mlx-cpp inspect DIR: whether mlx-cpp runs a checkpoint, by which part of
// the graph, and what in it is not understood (model/model_inspection.h).
#include <cstdio>
#include <iostream>

#include "cli/command.h"
#include "cli/model_argument.h"
#include "io/error.h"
#include "model/model_inspection.h"

namespace mlx_cpp::cli {

void register_inspect_command(CLI::App& app) {
  auto model = std::make_shared<std::string>();
  auto* command = app.add_subcommand(
      "inspect", "Say whether a model directory is supported, how, and what it holds that is not");
  command->add_option("model", *model, "A model directory or a pulled model's name")->required();
  command->callback([model] {
    auto report = inspect_model(resolve_model_argument(*model));
    std::cout << "model_type   " << (report.model_type.empty() ? "(none)" : report.model_type)
              << '\n';
    if (!report.supported) {
      std::cout << "supported    no: " << report.refusal << '\n';
      throw Error("model_type '" + report.model_type + "' is not supported");
    }
    std::cout << "supported    yes, by the " << report.tier << " graph\n"
              << "shape        " << report.shape << '\n';
    std::cout << "config keys  ";
    if (report.unread_config_keys.empty()) std::cout << "every model key is read";
    for (size_t i = 0; i < report.unread_config_keys.size(); ++i)
      std::cout << (i ? ", " : "not read: ") << report.unread_config_keys[i];
    std::cout << '\n';
    if (report.weight_problems) {
      std::cout << "tensors      " << *report.weight_problems << '\n';
      throw Error("the checkpoint's tensors do not match its config");
    }
    std::cout << "tensors      every tensor is used and has the expected shape ("
              << report.parameter_count << " parameters)\n";
  });
}

}  // namespace mlx_cpp::cli
