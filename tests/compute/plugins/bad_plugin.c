/* Misbehaving C-ABI estimator plugins for the tests, one per build: BAD_ABI (wrong version),
 * NEGATIVE_TIME (an invalid answer), FAILING (estimate() reports an error). */
#include <stdio.h>

#include "compute/plugin_abi.h"

static int state_token;

static void* bad_create(const char* options, char* error, size_t error_size) {
  (void)options;
  (void)error;
  (void)error_size;
  return &state_token;
}

static int bad_estimate(void* state, const OrreryOp* op, const OrreryHardware* hardware, OrreryEstimate* result,
                        char* error, size_t error_size) {
  (void)state;
  (void)hardware;
#if defined(FAILING)
  (void)result;
  snprintf(error, error_size, "cannot cost %s", op->kind);
  return 3;
#else
  (void)op;
  (void)error;
  (void)error_size;
  result->time_s = -1.0;
  return 0;
#endif
}

static void bad_destroy(void* state) { (void)state; }

#if defined(BAD_ABI)
#define VERSION 99u
#else
#define VERSION ORRERY_ESTIMATOR_ABI_VERSION
#endif

static const OrreryEstimatorPlugin kBadPlugin = {VERSION, "bad", bad_create, bad_estimate, bad_destroy};

const OrreryEstimatorPlugin* orrery_estimator_plugin(void) { return &kBadPlugin; }
