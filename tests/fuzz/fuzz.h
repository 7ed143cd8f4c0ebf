/* fuzz.h: helpers shared by the libFuzzer targets in tests/fuzz/.
 *
 * Every target defines LLVMFuzzerTestOneInput() and is built two ways:
 *   - with clang -fsanitize=fuzzer (the `make fuzz` build in build-fuzz/),
 *     where libFuzzer supplies main() and mutates inputs;
 *   - with the normal compiler and replay.c's main(), which runs the target
 *     over every file of the committed corpora (meson test --suite fuzz).
 * A broken invariant prints what was wrong and aborts, so both libFuzzer and
 * the replay runner report it as a crash with the offending input. */
#ifndef CORRAL_FUZZ_H
#define CORRAL_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Print "fuzz invariant failed: file:line: (cond) message" and abort(). */
__attribute__((noreturn, format(printf, 4, 5))) void fuzz_fail(const char *file, int line, const char *cond,
                                                               const char *fmt, ...);

/* FUZZ_ASSERT(cond) or FUZZ_ASSERT(cond, "printf format", args...). */
#define FUZZ_ASSERT(cond, ...)                                                                                        \
        do {                                                                                                          \
                if (!(cond))                                                                                          \
                        fuzz_fail(__FILE__, __LINE__, #cond, " " __VA_ARGS__);                                        \
        } while (0)

/* A memfd holding data; *ret_path gets "/proc/self/fd/N", which the code
 * under test opens by name like any file (each open starts at offset 0).
 * Returns the fd (the caller closes it); aborts when memfds do not work. */
int fuzz_memfd(const char *name, const void *data, size_t len, char *ret_path, size_t path_len);

#endif
