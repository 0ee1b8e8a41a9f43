/* libportable — nets: autograd, modules, losses, optimizers, safetensors.
 * (Filled in by the nets work; see docs/nets.md.) */
#ifndef PORTABLE_NN_H
#define PORTABLE_NN_H

#include "ops.h"

#endif
