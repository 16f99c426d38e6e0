// The device side of the checks GPU kernels make on data (gpu/device_checks.h): a check owns
// one or more slots, 64-bit words a kernel lowers atomically to (position << 32 | a 32-bit
// detail) where it finds a failure. The lowest position wins, and each position reports one
// detail, so a slot ends holding exactly what the reference's in-order loop reports first.
// All ones (HCSP_CHECK_CLEAR) is no failure.
#pragma once
#include "../vendor.h"

#define HCSP_CHECK_CLEAR 0xffffffffffffffffull

/** position (< 2^32 - 1: the launcher's check) failed with `detail` */
HCSP_DEVICE void hcspCheckFail(unsigned long long* slot, int64_t position, int32_t detail) {
  hcspAtomicMinU64(slot, (static_cast<unsigned long long>(position) << 32) | static_cast<uint32_t>(detail));
}

/** slots[0, n) = HCSP_CHECK_CLEAR: a fresh block of slots, one launch per run */
HCSP_GLOBAL void hcsp_checks_clear(unsigned long long* slots, int64_t n);
