/* clgrad export / import: checkpoints to ONNX models and back (clgrad/onnx.h). export
 * writes a checkpoint's network with its weights as an ONNX graph; import reads an
 * ONNX graph (torch.onnx.export's, or export's) into a checkpoint that eval, predict,
 * info and train (--init, or --resume with the model file written by --model) take. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"

/* Options common to both: --device, --model (import only), --help. */
static int parse(int argc, char **argv, const char *cmd, const char **device, const char **model, const char *help)
{
    static const struct option longs[] = {{"device", 1, 0, 'd'}, {"model", 1, 0, 'm'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    opterr = 0;
    for (int c; (c = getopt_long(argc, argv, ":h", longs, NULL)) != -1;) {
        if (c == 'h') return printf("%s", help), 0;
        if (c == 'd') *device = optarg;
        else if (c == 'm' && model) *model = optarg;
        else return cli_bad_option(cmd, c, argv);
    }
    if (optind != argc - 2) return cli_usage_error(cmd, !strcmp(cmd, "export") ? "give CKPT and OUT.onnx" : "give MODEL.onnx and OUT.ckpt");
    if (!clg_onnx_available())
        return cli_fail(cmd, "this clgrad was built without ONNX (protobuf-c was not found at configure time: install "
                        "libprotobuf-c-dev and protobuf-c-compiler and build again)");
    return -1;
}

int cmd_export(int argc, char **argv)
{
    const char *device = NULL;
    int rc = parse(argc, argv, "export", &device, NULL,
                   "Usage: clgrad export CKPT OUT.onnx [--device SPEC]\n"
                   "Writes the network of a clgrad checkpoint, with its weights, as an ONNX model (opset 17)\n"
                   "for onnxruntime and other runtimes: input \"input\" [batch, <the model's input>] (float32,\n"
                   "or int64 tokens), output \"output\"; evaluation mode (dropout off, batch norm's running\n"
                   "statistics). Every model-file layer exports; the input transforms (data.scale and\n"
                   "data.normalize) are not part of the graph.\n");
    if (rc >= 0) return rc;
    rc = 0;
    const char *ckpt = argv[optind], *out = argv[optind + 1];
    if (cli_check_writable("export", "OUT.onnx", out)) return 1;
    clg_device *dev = cli_open_device("export", device, false);
    if (!dev) return 1;
    clg_model *m = NULL;
    clg_module *net = NULL;
    rc = cli_load_checkpoint("export", ckpt, dev, &m, &net);
    if (!rc && clg_module_export_onnx(net, m, out) != CLG_OK) rc = cli_fail("export", "%s", clg_device_error(dev));
    if (!rc) printf("%s: %d layers, %lld parameters, written as ONNX (opset 17) to %s\n", ckpt, clg_model_layer_count(m),
                    (long long)clg_module_numel(net, false), out);
    clg_module_free(net);
    clg_model_free(m);
    clg_device_close(dev);
    return rc;
}

static int write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f || fprintf(f, "%s\n", text) < 0 || fclose(f) != 0) {
        if (f) fclose(f);
        return cli_fail("import", "--model %s: cannot write it", path);
    }
    return 0;
}

/* The network, a fresh optimizer of the model's (so that --resume finds one) and the
 * model description into a checkpoint at step 0. */
static int save(clg_device *dev, const clg_model *m, clg_module *net, const char *out, const char *model_path)
{
    char *json = clg_model_json(m);
    clg_optimizer *opt = json ? clg_model_build_optimizer(m, net) : NULL;
    int rc = 0;
    clg_train_state ts = {.base_lr = clg_model_get_optim(m)->lr};
    snprintf(ts.lr_schedule, sizeof ts.lr_schedule, "%s", clg_model_get_optim(m)->schedule);
    if (!json || !opt || clg_checkpoint_save(net, opt, &ts, json, out) != CLG_OK)
        rc = cli_fail("import", "%s", json ? clg_device_error(dev) : "out of host memory");
    if (!rc && model_path) rc = write_text(model_path, json);
    clg_optimizer_free(opt);
    free(json);
    return rc;
}

int cmd_import(int argc, char **argv)
{
    const char *device = NULL, *model_path = NULL;
    int rc = parse(argc, argv, "import", &device, &model_path,
                   "Usage: clgrad import MODEL.onnx OUT.ckpt [--model OUT.json] [--device SPEC]\n"
                   "Reads an ONNX model into a checkpoint of its network and weights. clgrad export's files\n"
                   "come back whole, with their model file; torch.onnx.export's (opset 13 or later, attention,\n"
                   "GPTs and ResNets included: include/clgrad/onnx.h lists what is read) get a model description\n"
                   "of the default loss and optimizer (cross_entropy, sgd) and no data. clgrad eval, predict\n"
                   "and info take the checkpoint, and clgrad train fine-tunes it (--init OUT.ckpt, or --resume\n"
                   "OUT.ckpt with the model file --model writes; give --data). Nodes that are not read fail\n"
                   "naming the node and op.\n");
    if (rc >= 0) return rc;
    rc = 0;
    const char *in = argv[optind], *out = argv[optind + 1];
    if (cli_check_writable("import", "OUT.ckpt", out) || cli_check_writable("import", "--model", model_path)) return 1;
    clg_device *dev = cli_open_device("import", device, false);
    if (!dev) return 1;
    clg_model *m = NULL;
    clg_module *net = NULL;
    if (clg_module_import_onnx(dev, in, &m, &net) != CLG_OK) rc = cli_fail("import", "%s", clg_device_error(dev));
    if (!rc) rc = save(dev, m, net, out, model_path);
    if (!rc) {
        printf("%s: %d layers, %lld parameters, saved to %s%s%s\n", in, clg_model_layer_count(m),
               (long long)clg_module_numel(net, false), out, model_path ? ", model file " : "", model_path ? model_path : "");
        cli_print_layers(m);
    }
    clg_module_free(net);
    clg_model_free(m);
    clg_device_close(dev);
    return rc;
}
