/* Replays a fuzz target's corpus without libFuzzer: every file in the directories
 * given goes through LLVMFuzzerTestOneInput once. Built with the normal compiler, so
 * that ctest checks the corpus (crashers included) in every build. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    unsigned char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            unsigned char *nb = realloc(buf, cap = cap ? 2 * cap : 4096);
            if (!nb) break;
            buf = nb;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        if (r == 0) break;
        n += r;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf ? buf : (const unsigned char *)"", n);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    int files = 0;
    for (int i = 1; i < argc; i++) {
        DIR *d = opendir(argv[i]);
        if (!d) {
            fprintf(stderr, "replay: cannot open corpus directory %s\n", argv[i]);
            return 1;
        }
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.') continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
            if (replay_file(path) != 0) {
                fprintf(stderr, "replay: cannot read %s\n", path);
                closedir(d);
                return 1;
            }
            files++;
        }
        closedir(d);
    }
    printf("replayed %d inputs\n", files);
    return files > 0 ? 0 : 1;   /* an empty corpus is a mistake, not a pass */
}
