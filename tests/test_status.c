/* Status and OpenCL error names. */
#include <string.h>

#include "check.h"

int main(void)
{
    CHECK(!strcmp(clg_status_str(CLG_OK), "CLG_OK"));
    /* the library's version is the headers' (the same build) */
    CHECK_MSG(!strcmp(clg_version(), CLG_VERSION), "clg_version() %s, CLG_VERSION %s", clg_version(), CLG_VERSION);
    CHECK(!strcmp(clg_status_str(CLG_ERR_BUILD), "CLG_ERR_BUILD"));
    for (int s = 0; s < CLG_STATUS_COUNT; s++)
        CHECK_MSG(!strncmp(clg_status_str((clg_status)s), "CLG_", 4), "status %d unnamed", s);
    CHECK(!strcmp(clg_status_str((clg_status)999), "CLG_ERR_UNKNOWN"));
    CHECK(!strcmp(clg_cl_error_name(0), "CL_SUCCESS"));
    CHECK(!strcmp(clg_cl_error_name(-5), "CL_OUT_OF_RESOURCES"));
    CHECK(!strcmp(clg_cl_error_name(-4), "CL_MEM_OBJECT_ALLOCATION_FAILURE"));
    CHECK(!strcmp(clg_cl_error_name(-11), "CL_BUILD_PROGRAM_FAILURE"));
    CHECK(!strcmp(clg_cl_error_name(-54), "CL_INVALID_WORK_GROUP_SIZE"));
    CHECK(!strcmp(clg_cl_error_name(-61), "CL_INVALID_BUFFER_SIZE"));
    CHECK(!strcmp(clg_cl_error_name(-1001), "CL_PLATFORM_NOT_FOUND_KHR"));
    CHECK(!strcmp(clg_cl_error_name(-12345), "CL_UNKNOWN_ERROR"));
    /* Every code OpenCL defines (0 to -19, -30 to -72) has a name, and nothing else. */
    for (int e = 0; e >= -80; e--) {
        int defined = e >= -19 || (e <= -30 && e >= -72);
        CHECK_MSG(defined == (strcmp(clg_cl_error_name(e), "CL_UNKNOWN_ERROR") != 0), "code %d", e);
    }
    return check_report("test_status");
}
