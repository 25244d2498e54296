/* clgrad.h: everything clgrad offers, in one include.
 *
 *   #include <clgrad.h>
 *   clg_device *dev;
 *   if (clg_device_open(NULL, &dev) != CLG_OK) { ... clg_device_error(dev) ... }
 *
 * Link with `pkg-config --libs clgrad` or CMake's find_package(clgrad) and clgrad::clgrad.
 */
#ifndef CLGRAD_H
#define CLGRAD_H

#include "clgrad/status.h"
#include "clgrad/device.h"
#include "clgrad/tensor.h"
#include "clgrad/ops.h"
#include "clgrad/autograd.h"
#include "clgrad/data.h"
#include "clgrad/nn.h"
#include "clgrad/optim.h"
#include "clgrad/train.h"
#include "clgrad/io.h"
#include "clgrad/model.h"

#define CLGRAD_VERSION_MAJOR 0
#define CLGRAD_VERSION_MINOR 1
#define CLGRAD_VERSION_PATCH 0

#endif
