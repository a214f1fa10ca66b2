/* startup: what a short-lived process costs, for bench/run.py's start-up table.
 *
 *   startup RUNS PRELOAD|- PROGRAM [ARGS...]
 *
 * Starts PROGRAM RUNS times, one after the other, with LD_PRELOAD=PRELOAD (or
 * without LD_PRELOAD for "-"), its output thrown away, and prints one line per
 * run: "CPU_US FAULTS" — the child's user plus system time in microseconds and
 * its minor plus major page faults, as wait4 reports them. The CPU time is the
 * process's own (dynamic loading, the allocator's set-up, the program, exit),
 * not the wall time, so a loaded machine moves it less. Exit status: 0, or 1
 * when a run could not start or did not exit with status 0.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: startup RUNS PRELOAD|- PROGRAM [ARGS...]\n");
        return 1;
    }
    long runs = strtol(argv[1], NULL, 10);
    const char *preload = argv[2];
    for (long i = 0; i < runs; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("startup: fork");
            return 1;
        }
        if (pid == 0) {
            if (strcmp(preload, "-") == 0)
                unsetenv("LD_PRELOAD");
            else
                setenv("LD_PRELOAD", preload, 1);
            int null = open("/dev/null", O_RDWR);
            if (null >= 0) {
                dup2(null, 0);
                dup2(null, 1);
            }
            execvp(argv[3], argv + 3);
            _exit(127);
        }
        int status;
        struct rusage ru;
        if (wait4(pid, &status, 0, &ru) != pid) {
            perror("startup: wait4");
            return 1;
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "startup: %s: status 0x%x\n", argv[3], status);
            return 1;
        }
        long long us = (long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000LL + ru.ru_utime.tv_usec +
                       ru.ru_stime.tv_usec;
        printf("%lld %ld\n", us, ru.ru_minflt + ru.ru_majflt);
    }
    return 0;
}
