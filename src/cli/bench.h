/*
 * bench.h — what the parts of `ggufq bench` share.
 */
#ifndef GGUFQ_CLI_BENCH_H
#define GGUFQ_CLI_BENCH_H

#include <stddef.h>

/* The directory of the peer's libraries: `given` (--peer) if not NULL, else
 * $GGUFQ_PEER_DIR, else peer/package/bins/linux-x64 next to the program. */
void bench_peer_dir(const char *given, char *buf, size_t size);

/* `ggufq bench --requant ...`: requantization against llama_model_quantize. */
int bench_requant(int argc, char **argv);

#endif
