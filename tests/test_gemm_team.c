/* test_gemm_team: the host engine's threads (src/gemm/team.c), no device: every part of a
 * call runs once, the caller returns only after all have, two callers at once each get
 * their own parts (one through the team, the other in turn on its own thread), and calls
 * of more parts than the team has run in turn. Runs under TSan too (scripts/test.sh). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "gemm/team.h"

#define MAX_PARTS 64

typedef struct job {
    int runs[MAX_PARTS];   /* how often each part ran in this call */
    int seen_parts;        /* the parts count each part was told, or -1 where it differed */
    long sum[MAX_PARTS];   /* each part's own work, checked against its index */
} job;

static void part_fn(void *arg, int part, int parts)
{
    job *j = arg;
    j->runs[part]++;
    if (j->seen_parts != parts) j->seen_parts = -1;
    long s = 0;
    for (int i = 0; i < 20000; i++) s += (long)(i % 7) * (part + 1);
    j->sum[part] = s;
}

static long want_sum(int part)
{
    long s = 0;
    for (int i = 0; i < 20000; i++) s += (long)(i % 7) * (part + 1);
    return s;
}

/* One call of `parts` parts; the number of wrong results. */
static int one_call(int parts)
{
    job j;
    memset(&j, 0, sizeof j);
    j.seen_parts = parts;
    clg__team_run(part_fn, &j, parts);
    int bad = j.seen_parts != parts;
    for (int p = 0; p < parts; p++) bad += j.runs[p] != 1 || j.sum[p] != want_sum(p);
    for (int p = parts; p < MAX_PARTS; p++) bad += j.runs[p] != 0;
    return bad;
}

static void *caller(void *arg)
{
    int *bad = arg;
    int size = clg__team_size();
    for (int c = 0; c < 300; c++) *bad += one_call(1 + c % (size + 1));
    return NULL;
}

int main(void)
{
    int size = clg__team_size();
    printf("test_gemm_team: %d threads\n", size);
    CHECK(size >= 1 && size <= 16);
    CHECK(clg__team_size() == size);   /* started once */
    int bad = 0;
    for (int c = 0; c < 500; c++) bad += one_call(1 + c % size);
    CHECK_MSG(bad == 0, "one caller: %d wrong parts", bad);
    /* more parts than threads: in turn on the caller */
    bad = one_call(size + 3) + one_call(MAX_PARTS);
    CHECK_MSG(bad == 0, "more parts than threads: %d wrong", bad);
    /* two callers at once (two devices' queues): each call still runs each part once */
    pthread_t t[2];
    int tb[2] = {0, 0};
    for (int i = 0; i < 2; i++) CHECK(pthread_create(&t[i], NULL, caller, &tb[i]) == 0);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    CHECK_MSG(tb[0] == 0 && tb[1] == 0, "two callers: %d and %d wrong parts", tb[0], tb[1]);
    return check_report("test_gemm_team");
}
