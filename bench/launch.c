/* launch: run one workload and measure it, for bench/run.py.
 *
 *   launch PRELOAD PROGRAM [ARGS...]
 *
 * Forks; the child sets LD_PRELOAD=PRELOAD (or removes LD_PRELOAD when
 * PRELOAD is "-") and executes PROGRAM.  On file descriptor 3 the launcher
 * writes "pid N" as soon as the child exists (so the driver can sample its
 * /proc/N/maps) and, once the child has been reaped, "done STATUS MAXRSS_KIB
 * ELAPSED_NS MINFLT MAJFLT" (the page faults are those of the child and of
 * the descendants it waited for, as wait4 reports them).  Exit status: 0, or
 * 1 when the child could not be started.
 *
 * Why not spawn the workload straight from the Python driver: a child's
 * ru_maxrss counts the address space it had before exec, which for a process
 * forked or vforked by the driver is the driver's own (tens of MiB).  Forked
 * from this small program, the floor is this program's RSS, a few hundred KiB.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: launch PRELOAD|- PROGRAM [ARGS...]\n");
        return 1;
    }
    FILE *report = fdopen(3, "w");
    if (report == NULL) {
        fprintf(stderr, "launch: file descriptor 3 is not open\n");
        return 1;
    }
    long long t0 = now_ns();
    pid_t pid = fork();
    if (pid < 0) {
        perror("launch: fork");
        return 1;
    }
    if (pid == 0) {
        close(3);
        if (strcmp(argv[1], "-") == 0)
            unsetenv("LD_PRELOAD");
        else
            setenv("LD_PRELOAD", argv[1], 1);
        execvp(argv[2], argv + 2);
        fprintf(stderr, "launch: cannot execute %s: %s\n", argv[2], strerror(errno));
        _exit(127);
    }
    fprintf(report, "pid %ld\n", (long)pid);
    fflush(report);

    int status;
    struct rusage ru;
    for (;;) {
        pid_t r = wait4(pid, &status, 0, &ru);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR) {
            perror("launch: wait4");
            return 1;
        }
    }
    long long elapsed = now_ns() - t0;
    fprintf(report, "done %d %ld %lld %ld %ld\n", status, ru.ru_maxrss, elapsed, ru.ru_minflt,
            ru.ru_majflt);
    fclose(report);
    return 0;
}
