/*
 * sigbus.h — surviving an input file that shrinks while it is mapped
 * (see sigbus.c for how and why), and the CLI's test pause hook.
 */
#ifndef GGUFQ_CLI_SIGBUS_H
#define GGUFQ_CLI_SIGBUS_H

#include <stdbool.h>
#include <stdint.h>

/* Install the SIGBUS handler and ignore SIGXFSZ; once, before any file is mapped. */
void cli_sigbus_install(void);

/* True once a read of a mapped file faulted (the handler replaced the lost pages with zeros). */
bool cli_input_fault(void);

/*
 * True if the run must stop because `path` (mapped with mapped_size bytes)
 * is no longer what was mapped: a fault was caught, or the file is now
 * shorter (a write(2) from a vanished page fails with EFAULT, no signal).
 * mapped_size 0: only the fault is checked.
 */
bool cli_input_changed(const char *path, uint64_t mapped_size);

/*
 * "ggufq: <file>: offset <n>: the file changed size while being read (SIGBUS)"
 * on stderr, naming `path` when the faulting mapping is that file (else the
 * mapped file's own path), then "; <out> not written" when out is not NULL.
 */
void cli_report_input_changed(const char *path, const char *out);

/*
 * TEST HOOK, a no-op in the installed `ggufq`. In the test build
 * `ggufq-testhooks` (tests/cli_testhooks.c), with
 * GGUFQ_TEST_PAUSE_BEFORE_DATA=<ms> in the environment, it sleeps that long;
 * a SIGINT/SIGTERM ends the sleep early, and so does a change of input's size
 * from input_size (input NULL: not watched). The commands call it once their
 * output file is open and before tensor data is read, so the CLI tests can
 * truncate the input or send a signal at a known point; it prints
 * "ggufq: test pause" on stderr when it starts.
 */
void cli_test_pause(const char *input, uint64_t input_size);

#endif
