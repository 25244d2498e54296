/* event.c: the runtime seam's events (runtime.h): a clg_event is an OpenCL event. */
#include "device_cl.h"

int clg__event_wait(clg_event *ev)
{
    cl_event e = (cl_event)ev;
    cl_int status = CL_COMPLETE, r = clWaitForEvents(1, &e);
    if (r == CL_SUCCESS) r = clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);
    return r != CL_SUCCESS ? r : status < 0 ? status : 0;
}

void clg__event_release(clg_event *ev)
{
    if (ev) clReleaseEvent((cl_event)ev);
}
