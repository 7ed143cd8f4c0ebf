/* stats.h: clocks and percentiles for the C benchmarks under bench/. */
#ifndef CORRAL_BENCH_STATS_H
#define CORRAL_BENCH_STATS_H

#include <stddef.h>
#include <stdlib.h>
#include <time.h>

static inline double bench_clock_ms(clockid_t clock)
{
        struct timespec t;
        clock_gettime(clock, &t);
        return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static inline double now_ms(void)
{
        return bench_clock_ms(CLOCK_MONOTONIC);
}

/* CPU time of this thread: on a shared machine, what the work cost without
 * the time other processes held the CPU. */
static inline double cpu_ms(void)
{
        return bench_clock_ms(CLOCK_THREAD_CPUTIME_ID);
}

static inline int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

/* The p-th percentile (0 to 100) of n sorted values, nearest rank. */
static inline double pct(const double *sorted, size_t n, double p)
{
        size_t i = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
        return sorted[i < n ? i : n - 1];
}

#endif
