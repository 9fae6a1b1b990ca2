// The C++ side of tests/consumers/consumer.c: the header used from C++ in a
// project with no C compiler enabled. Same block, same expected output.
#include <ggufq.h>

#include <array>
#include <cstdio>

int main() {
    std::array<unsigned char, 34> block{};
    block[1] = 0x40;   // fp16 scale 2.0, little-endian
    for (int i = 0; i < 32; i++) block[2 + i] = static_cast<unsigned char>(static_cast<signed char>(i - 16));
    std::array<float, 32> w{};
    int st = ggufq_dequantize(GGUFQ_TYPE_Q8_0, block.data(), w.data(), static_cast<int64_t>(w.size()));
    if (st != GGUFQ_OK) {
        std::fprintf(stderr, "ggufq_dequantize: %s\n", ggufq_strerror(st));
        return 1;
    }
    std::printf("ggufq %s q8_0 %g %g %g\n", ggufq_version(), w[0], w[17], w[31]);
    return 0;
}
