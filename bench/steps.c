/* bench/sbx-ns-steps.sh's runner: steps RUNS OUT :: ARGV... [:: ARGV...]
 *
 * Runs each ARGV (its words up to the next "::") in turn, RUNS rounds,
 * each with its stderr appended to OUT, and writes to OUT around every
 * run the lines a -DSBX_MARKS build of sbx-ns writes for its steps
 * (lib/mark.h): "sbx-mark NS 0 0 spawn K" before
 * the fork and "sbx-mark NS 0 0 waited K" once waitpid returned, K the
 * argv's index. A word's first "{}" is replaced by the round's number
 * (from 0), made before the spawn mark, so that a run that must be given
 * a new file each round (sbx-ns --observe) gets one. No shell and no pipe
 * between the runs: what lies between spawn and waited is the program's
 * alone. Exits 1 if a run fails. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void mark(int fd, const char *what, int k)
{
	struct timespec t;
	char line[96];
	int n;

	clock_gettime(CLOCK_MONOTONIC, &t);
	n = snprintf(line, sizeof line, "sbx-mark %lld 0 0 %s %d\n",
		     (long long)t.tv_sec * 1000000000LL + t.tv_nsec, what, k);
	if (write(fd, line, (size_t)n) != n) {
		perror("steps: write");
		exit(111);
	}
}

/* ARGV for round R: a new vector whose words holding "{}" are new strings
 * with R in its place, the others ARGV's own (free_round frees them). */
static char **round_argv(char **argv, int r)
{
	size_t n = 0;
	char **w;

	while (argv[n])
		n++;
	if (!(w = calloc(n + 1, sizeof *w))) {
		perror("steps: calloc");
		exit(111);
	}
	for (size_t i = 0; i < n; i++) {
		char *at = strstr(argv[i], "{}");

		w[i] = argv[i];
		if (at && asprintf(&w[i], "%.*s%d%s", (int)(at - argv[i]), argv[i], r, at + 2) < 0) {
			perror("steps: asprintf");
			exit(111);
		}
	}
	return w;
}

static void free_round(char **argv, char **w)
{
	for (size_t i = 0; argv[i]; i++)
		if (w[i] != argv[i])
			free(w[i]);
	free(w);
}

int main(int argc, char **argv)
{
	char **cmds[16];
	int ncmds = 0, runs, out, st;

	if (argc < 5 || strcmp(argv[3], "::") || (runs = atoi(argv[1])) <= 0) {
		fprintf(stderr, "steps: usage: steps RUNS OUT :: ARGV... [:: ARGV...]\n");
		return 100;
	}
	for (int i = 3; i < argc; i++)
		if (!strcmp(argv[i], "::")) {
			argv[i] = NULL;
			if (ncmds == 16 || i + 1 == argc) {
				fprintf(stderr, "steps: usage: at most 16 commands, none empty\n");
				return 100;
			}
			cmds[ncmds++] = &argv[i + 1];
		}
	out = open(argv[2], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (out < 0) {
		perror("steps: open");
		return 111;
	}
	for (int r = 0; r < runs; r++)
		for (int k = 0; k < ncmds; k++) {
			char **w = round_argv(cmds[k], r);
			pid_t pid;

			mark(out, "spawn", k);
			pid = fork();
			if (pid < 0) {
				perror("steps: fork");
				return 111;
			}
			if (pid == 0) {
				dup2(out, 2);
				execv(w[0], w);
				_exit(127);
			}
			if (waitpid(pid, &st, 0) != pid) {
				perror("steps: waitpid");
				return 111;
			}
			mark(out, "waited", k);
			if (!WIFEXITED(st) || WEXITSTATUS(st)) {
				fprintf(stderr, "steps: %s failed (status %d)\n", w[0], st);
				return 1;
			}
			free_round(cmds[k], w);
		}
	return 0;
}
