/*
 * gpu.h — gpu_devices: the GPU device nodes a sandbox may open (gpu.c).
 */
#ifndef SANDLOCK_GPU_H
#define SANDLOCK_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* Landlock rules for the chosen GPUs' nodes and the control nodes (none
 * when gpu_devices is off).  0, or -1 with *err, *msg. */
int sl_gpu_grant(int ruleset, uint64_t handled, const struct sandlock_sandbox *cfg, int *err,
                 char **msg);
/* The chosen indices as "0,2" for CUDA_VISIBLE_DEVICES; false when every
 * GPU (or none) is granted. */
bool sl_gpu_visible(const struct sandlock_sandbox *cfg, char *out, size_t cap);

#endif /* SANDLOCK_GPU_H */
