/* commands.h: the clgrad subcommands, one file each. Each takes argv from its own
 * name on (argv[0] is the command name) and returns the process exit status. */
#ifndef CLGRAD_TOOLS_COMMANDS_H
#define CLGRAD_TOOLS_COMMANDS_H

int cmd_devices(int argc, char **argv);
int cmd_selftest(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_predict(int argc, char **argv);
int cmd_sample(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_conformance(int argc, char **argv);
int cmd_warmup(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_import(int argc, char **argv);

#endif
