/* grad_coverage: fails when a differentiable op (src/tensor/ops.def) has not been
 * through a finite-difference gradient check. The gradient checks (tests/test_grad_*)
 * write every op they found on the tapes they checked into CLG_GRAD_COVERAGE_DIR;
 * ctest runs this after them. */
#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "tensor_impl.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: grad_coverage DIR\n");
        return 2;
    }
    bool seen[CLG_OP_COUNT] = {false};
    DIR *d = opendir(argv[1]);
    CHECK_MSG(d != NULL, "no coverage directory %s: did the gradient checks run?", argv[1]);
    struct dirent *e;
    int files = 0;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[2048], line[128];
        snprintf(path, sizeof path, "%s/%s", argv[1], e->d_name);
        FILE *f = fopen(path, "r");
        files++;
        while (f && fgets(line, sizeof line, f)) {
            line[strcspn(line, "\n")] = 0;
            for (int op = 0; op < CLG_OP_COUNT; op++)
                if (!strcmp(line, clg__op_name(op))) seen[op] = true;
        }
        if (f) fclose(f);
    }
    if (d) closedir(d);
    int missing = 0;
    for (int op = 0; op < CLG_OP_COUNT; op++)
        if (!seen[op]) {
            fprintf(stderr, "op %s has no gradient check\n", clg__op_name(op));
            missing++;
        }
    CHECK_MSG(missing == 0, "%d of %d differentiable ops have no gradient check", missing, CLG_OP_COUNT);
    printf("gradient checks cover %d of %d ops (%d records)\n", CLG_OP_COUNT - missing, CLG_OP_COUNT, files);
    return check_report("grad_coverage");
}
