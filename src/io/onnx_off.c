/* onnx_off.c: the ONNX calls of a library built without protobuf-c (CLGRAD_ONNX off or
 * not found at configure time): they say so. With it, src/io/onnx/ defines them. */
#ifndef CLGRAD_HAVE_ONNX
#include "clgrad/onnx.h"
#include "device_impl.h"

bool clg_onnx_available(void) { return false; }

clg_status clg_module_export_onnx(clg_module *net, const clg_model *desc, const char *path)
{
    (void)desc;
    return clg__fail(clg_module_device(net), CLG_ERR_UNSUPPORTED,
                     "clg_module_export_onnx: %s: this clgrad was built without ONNX (protobuf-c was not found; "
                     "install libprotobuf-c-dev and protobuf-c-compiler and configure again)", path ? path : "(null)");
}

clg_status clg_module_import_onnx(clg_device *dev, const char *path, clg_model **desc, clg_module **net)
{
    if (desc) *desc = NULL;
    if (net) *net = NULL;
    return clg__fail(dev, CLG_ERR_UNSUPPORTED,
                     "clg_module_import_onnx: %s: this clgrad was built without ONNX (protobuf-c was not found; "
                     "install libprotobuf-c-dev and protobuf-c-compiler and configure again)", path ? path : "(null)");
}
#else
typedef int clg__onnx_on;   /* ISO C wants something in a translation unit */
#endif
