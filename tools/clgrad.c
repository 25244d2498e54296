/* clgrad: the command-line tool. `clgrad COMMAND --help` for each command.
 * Every command exits 0 on success and non-zero with one line on stderr otherwise. */
#include <stdio.h>
#include <string.h>

#include <clgrad.h>

#include "commands.h"

static const struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} commands[] = {
    {"devices", cmd_devices, "list OpenCL devices and mark the default"},
    {"selftest", cmd_selftest, "run a kernel on a device and check the result"},
    {"train", cmd_train, "train a model file (examples/models/*.json) and save checkpoints"},
    {"eval", cmd_eval, "loss, accuracy and confusion matrix of a checkpoint on a test set (or text)"},
    {"predict", cmd_predict, "run a checkpoint on inputs from an .npy or IDX file"},
    {"sample", cmd_sample, "generate text with a checkpoint of a character model"},
    {"info", cmd_info, "the layers, settings and training state in a checkpoint"},
    {"plot", cmd_plot, "draw a metrics file's loss and accuracy curves as a PNG"},
    {"conformance", cmd_conformance, "check every op and optimizer against host references on every device"},
    {"export", cmd_export, "write a checkpoint's network and weights as an ONNX model"},
    {"import", cmd_import, "read an ONNX model (torch.onnx.export's) into a checkpoint"},
    {"warmup", cmd_warmup, "compile what training model files needs and store it in the program cache"},
};

static void usage(FILE *out)
{
    fprintf(out, "Usage: clgrad COMMAND [OPTIONS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n`clgrad COMMAND --help` describes a command's options; `clgrad --version` the version.\n"
                 "Environment: CLG_DEVICE picks the device (gpu, cpu, N, P:D or a name fragment).\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        printf("clgrad %s (library %s)\n", CLG_VERSION, clg_version());
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "clgrad: unknown command \"%s\" (try clgrad --help)\n", argv[1]);
    return 2;
}
