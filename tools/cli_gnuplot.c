/* cli_gnuplot.c: pictures through gnuplot (Debian's gnuplot-nox). The script goes to
 * gnuplot's stdin; its stderr goes to a temporary file, so that a failure can be told
 * in one line (its first) instead of gnuplot's multi-line echo of the script. */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

void cli_text_add(cli_text *t, const char *fmt, ...)
{
    va_list ap;
    for (bool grown = false;; grown = true) {
        if (!t->s && (t->cap || grown)) return;   /* memory ran out earlier */
        va_start(ap, fmt);
        int n = t->s ? vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap) : -1;
        va_end(ap);
        if (n >= 0 && t->len + (size_t)n < t->cap) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = 2 * t->cap + 4096 + (n > 0 ? (size_t)n : 0);
        char *s = realloc(t->s, cap);
        if (!s) free(t->s);
        t->s = s, t->cap = cap;
    }
}

static void first_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    buf[0] = '\0';
    while (f && fgets(buf, (int)len, f)) {
        buf[strcspn(buf, "\n")] = '\0';
        if (strspn(buf, " \t^") != strlen(buf)) break;   /* skip the blank and caret lines */
    }
    if (f) fclose(f);
}

static bool run(const char *script, const char *log, char *err, size_t errlen)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "gnuplot 2>'%s'", log);
    void (*old)(int) = signal(SIGPIPE, SIG_IGN);   /* gnuplot may quit before reading it all */
    FILE *p = popen(cmd, "w");
    bool wrote = p && fputs(script, p) >= 0;
    int status = p ? pclose(p) : -1;
    signal(SIGPIPE, old);
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) == 127) {
        snprintf(err, errlen, "cannot run gnuplot: is it installed? (apt-get install gnuplot-nox)");
        return false;
    }
    if (WEXITSTATUS(status) != 0 || !wrote) {
        char line[256];
        first_line(log, line, sizeof line);
        snprintf(err, errlen, "gnuplot failed (exit status %d): %s", WEXITSTATUS(status), line);
        return false;
    }
    return true;
}

bool cli_gnuplot(const char *script, const char *png, char *err, size_t errlen)
{
    const char *tmp = getenv("TMPDIR");
    char log[512];
    snprintf(log, sizeof log, "%s/clgrad-gnuplot-XXXXXX", tmp && *tmp && !strchr(tmp, '\'') ? tmp : "/tmp");
    int fd = mkstemp(log);
    if (fd < 0) {
        snprintf(err, errlen, "cannot make a temporary file in %s for gnuplot's messages", tmp ? tmp : "/tmp");
        return false;
    }
    close(fd);
    remove(png);   /* so that an old picture cannot pass for a new one */
    bool ok = run(script, log, err, errlen);
    unlink(log);
    struct stat sb;
    if (ok && (stat(png, &sb) != 0 || sb.st_size == 0)) {
        snprintf(err, errlen, "%s: gnuplot wrote no picture", png);
        ok = false;
    }
    return ok;
}
