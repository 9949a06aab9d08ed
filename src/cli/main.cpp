#include <iostream>

int main() {
  std::cout << "mlx-cpp\n";
  return 0;
}
