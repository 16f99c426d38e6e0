// The device checks' slots cleared on the device (kernels/checks.h): no memset, no copy.
#include "checks.h"

HCSP_GLOBAL void hcsp_checks_clear(unsigned long long* slots, int64_t n) {
  HCSP_GRID_STRIDE(i, n) { slots[i] = HCSP_CHECK_CLEAR; }
}
