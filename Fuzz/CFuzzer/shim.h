// libFuzzer's driver entry point (linked in by -sanitize=fuzzer), for fuzz targets whose main
// is Swift's: SwiftPM gives every executable its own main, so libFuzzer's is not used.
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
