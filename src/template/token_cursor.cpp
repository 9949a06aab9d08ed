#include "template/token_cursor.h"

namespace mlx_cpp::jinja {

std::string describe_token(const Token& token) {
  switch (token.kind) {
    case TokenKind::Text:
      return "text";
    case TokenKind::VariableBegin:
      return "'{{'";
    case TokenKind::VariableEnd:
      return "end of print statement";
    case TokenKind::BlockBegin:
      return "'{%'";
    case TokenKind::BlockEnd:
      return "end of statement block";
    case TokenKind::EndOfInput:
      return "end of template";
    default:
      return "'" + token.text + "'";
  }
}

}  // namespace mlx_cpp::jinja
