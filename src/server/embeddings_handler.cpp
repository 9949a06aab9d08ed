// POST /v1/embeddings: validate and tokenize on this HTTP thread, compute
// every input's embedding in one task on the engine thread (between two
// scheduler steps), answer in OpenAI's shape.
#include <variant>

#include "engine/embedding_runtime.h"
#include "io/error.h"
#include "server/embeddings_request.h"
#include "server/request_fields.h"
#include "server/route_context.h"

namespace mlx_cpp::server {

void handle_embeddings(RouteContext& context, const httplib::Request& http_request,
                       httplib::Response& response) {
  const ModelInfo model = ready_model(context.engine);
  if (model.embedding_dimension == 0)
    throw invalid_request("model '" + model.id +
                              "' generates text and makes no embeddings: serve an embedding "
                              "model (such as embeddinggemma-300m) for them",
                          "model");
  const auto request =
      parse_embeddings_request(parse_json_body(http_request.body), model.embedding_dimension);
  const Backend* backend = context.engine.backend();
  if (!backend) throw ApiError(503, "unavailable_error", "the model is still loading");
  // Every input is checked before any is computed.
  std::vector<std::vector<int>> inputs;
  std::size_t tokens = 0;
  for (const auto& input : request.inputs) {
    try {
      inputs.push_back(
          std::holds_alternative<std::string>(input)
              ? backend->embedding_ids(std::get<std::string>(input), request.prompt_name)
              : std::get<std::vector<int>>(input));
    } catch (const Error& error) {
      throw invalid_request(error.what(), request.prompt_name.empty() ? "input" : "prompt_name");
    }
    try {
      backend->check_embedding_input(inputs.back());
    } catch (const Error& error) {
      throw invalid_request("input " + std::to_string(inputs.size() - 1) + ": " + error.what(),
                            "input");
    }
    tokens += inputs.back().size();
  }
  std::vector<std::vector<float>> embeddings;
  context.engine.run_on_engine(
      [&](Backend& engine_backend) { embeddings = engine_backend.embed(inputs); });
  nlohmann::ordered_json data = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < embeddings.size(); ++i) {
    auto values = request.dimensions ? shorten_embedding(embeddings[i], request.dimensions)
                                     : std::move(embeddings[i]);
    nlohmann::ordered_json item{{"object", "embedding"}, {"index", i}};
    if (request.base64)
      item["embedding"] = embedding_as_base64(values);
    else
      item["embedding"] = std::move(values);
    data.push_back(std::move(item));
  }
  set_log_detail(std::to_string(inputs.size()) + " inputs, " + std::to_string(tokens) + " tokens");
  set_json(response, 200,
           {{"object", "list"},
            {"data", std::move(data)},
            {"model", model.id},
            {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}});
}

}  // namespace mlx_cpp::server
