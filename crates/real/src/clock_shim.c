/* tenure's clock shim (issue 37): an LD_PRELOAD library that steps a real server's
 * wall clock and nothing else. CLOCK_REALTIME (and _COARSE), gettimeofday and time
 * read the kernel's clock by the raw syscall (no vDSO, no dlsym, so no recursion:
 * what stops libfaketime 0.9.10 from starting redis-server 7.0.15) and add an offset
 * in nanoseconds read from an 8-byte file mapped into memory, which tenure rewrites to
 * step the clock (TENURE_CLOCK_OFFSET_FILE). Monotonic clocks are untouched. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile int64_t *offset_ns;

__attribute__((constructor)) static void tenure_clock_init(void) {
    const char *path = getenv("TENURE_CLOCK_OFFSET_FILE");
    if (!path) return;
    int fd = open(path, O_RDONLY);
    if (fd < 0) return;
    void *p = mmap(NULL, 8, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p != MAP_FAILED) offset_ns = (volatile int64_t *)p;
}

static int64_t offset(void) { return offset_ns ? *offset_ns : 0; }

static int raw(clockid_t clk, struct timespec *ts) {
    return (int)syscall(SYS_clock_gettime, clk, ts);
}

static void shift(struct timespec *ts) {
    int64_t ns = (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec + offset();
    ts->tv_sec = ns / 1000000000LL;
    ts->tv_nsec = ns % 1000000000LL;
    if (ts->tv_nsec < 0) { ts->tv_nsec += 1000000000LL; ts->tv_sec -= 1; }
}

int clock_gettime(clockid_t clk, struct timespec *ts) {
    int r = raw(clk, ts);
    if (r == 0 && (clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE)) shift(ts);
    return r;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    (void)tz;
    struct timespec ts;
    int r = raw(CLOCK_REALTIME, &ts);
    if (r != 0) return r;
    shift(&ts);
    if (tv) { tv->tv_sec = ts.tv_sec; tv->tv_usec = ts.tv_nsec / 1000; }
    return 0;
}

time_t time(time_t *t) {
    struct timespec ts;
    raw(CLOCK_REALTIME, &ts);
    shift(&ts);
    if (t) *t = ts.tv_sec;
    return ts.tv_sec;
}
