/* A program using the installed library, built by tests/install.sh through
 * CMake (c/) and pkg-config: dequantizes one Q8_0 block with scale 2 and
 * quants -16..15, and prints the library's version and three weights.
 * Expected output: "ggufq <version> q8_0 -32 2 30". */
#include <ggufq.h>
#include <stdio.h>

int main(void) {
    unsigned char block[34] = { 0x00, 0x40 };   /* fp16 scale 2.0, little-endian */
    float w[32];
    for (int i = 0; i < 32; i++) block[2 + i] = (unsigned char)(signed char)(i - 16);
    int st = ggufq_dequantize(GGUFQ_TYPE_Q8_0, block, w, 32);
    if (st != GGUFQ_OK) {
        fprintf(stderr, "ggufq_dequantize: %s\n", ggufq_strerror(st));
        return 1;
    }
    printf("ggufq %s q8_0 %g %g %g\n", ggufq_version(), w[0], w[17], w[31]);
    return 0;
}
