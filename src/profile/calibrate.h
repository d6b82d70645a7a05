// Micro-benchmarks that give real devices their roofline parameters.
#pragma once

#include <cstddef>

#include "hetsched/platform.h"
#include "profile/profile_db.h"

namespace hetsched {

// For every real device of `platform` whose peaks are 0: read them from `db`
// when stored, else measure them on the device (a large oneDNN matmul for
// FLOP/s, a large copy for bandwidth, an empty launch for the overhead;
// about a second per device) and store them. Emulated devices keep their
// file's parameters. Shared resources of real devices (the host DRAM) get
// their bandwidth measured with every device copying at once.
void calibrate_platform(Platform& platform, ProfileDB& db);

// memset with the calling thread's OpenMP team (a device's cores, when run
// on its worker): what the micro-benchmarks use to write large buffers.
void parallel_fill(char* dst, size_t bytes, int value);

}  // namespace hetsched
