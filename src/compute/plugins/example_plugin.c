/* An example estimator plugin for Orrery's C ABI (plugin_abi.h, docs/compute.md "Plugins").
 *
 * It costs every op as a datasheet roofline, max(FLOPs / peak, bytes / bandwidth) plus the preset's
 * launch overhead, times a scale given in the options as "scale=X" (default 1). Build it as a
 * shared library and name it in a scenario:
 *     compute: {default: plugin, plugin: liborrery_example_estimator_plugin.so, plugin_options: "scale=1.2"}
 */
#include <stdio.h>
#include <stdlib.h>

#include "compute/plugin_abi.h"

typedef struct ExampleState {
  double scale;
} ExampleState;

static void* example_create(const char* options, char* error, size_t error_size) {
  double scale = 1.0;
  if (options != NULL && options[0] != '\0') {
    char extra = 0;
    if (sscanf(options, "scale=%lf%c", &scale, &extra) != 1 || !(scale > 0.0)) {
      snprintf(error, error_size, "bad options '%s' (expected scale=X with X > 0)", options);
      return NULL;
    }
  }
  ExampleState* state = malloc(sizeof *state);
  if (state == NULL) {
    snprintf(error, error_size, "out of memory");
    return NULL;
  }
  state->scale = scale;
  return state;
}

static int example_estimate(void* opaque, const OrreryOp* op, const OrreryHardware* hardware, OrreryEstimate* result,
                            char* error, size_t error_size) {
  const ExampleState* state = opaque;
  if (!(hardware->peak_flops > 0.0) || !(hardware->memory_bandwidth > 0.0)) {
    snprintf(error, error_size, "hardware %s has no peak or bandwidth", hardware->name);
    return 1;
  }
  const double compute = op->flops / hardware->peak_flops;
  const double memory = (double)(op->bytes_read + op->bytes_written) / hardware->memory_bandwidth;
  const double work = compute > memory ? compute : memory;
  result->time_s = work == 0.0 ? 0.0 : (work + hardware->launch_overhead_s) * state->scale;
  snprintf(result->bound, sizeof result->bound, "%s", compute >= memory ? "compute" : "memory");
  snprintf(result->note, sizeof result->note, "example plugin: datasheet roofline x %g on %s for %s", state->scale,
           hardware->name, op->kind);
  return 0;
}

static void example_destroy(void* state) { free(state); }

static const OrreryEstimatorPlugin kExamplePlugin = {
    ORRERY_ESTIMATOR_ABI_VERSION, "example", example_create, example_estimate, example_destroy,
};

const OrreryEstimatorPlugin* orrery_estimator_plugin(void) { return &kExamplePlugin; }
