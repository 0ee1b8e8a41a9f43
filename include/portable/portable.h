/** @file
 * libportable — the umbrella header: include this one. */
#ifndef PORTABLE_PORTABLE_H
#define PORTABLE_PORTABLE_H

#include "device.h"
#include "env.h"
#include "graph.h"
#include "log.h"
#include "nn.h"
#include "ops.h"
#include "status.h"
#include "tensor.h"
#include "trace.h"
#include "types.h"
#include "version.h"

#endif
