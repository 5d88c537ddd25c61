#include "unit.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static struct unit_test *head, **tail = &head;

void unit_register(struct unit_test *t)
{
	*tail = t;
	tail = &t->next;
}

int unit_capture(void (*fn)(void *), void *arg, char *err, size_t errsz)
{
	int p[2], st;
	size_t n = 0;
	ssize_t r;
	pid_t pid;

	if (pipe(p) < 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(p[1], 2);
		close(p[0]);
		fn(arg);
		_exit(0);
	}
	close(p[1]);
	while (n + 1 < errsz && (r = read(p[0], err + n, errsz - 1 - n)) > 0)
		n += (size_t)r;
	err[n] = '\0';
	close(p[0]);
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv)
{
	int passed = 0, failed = 0;

	for (struct unit_test *t = head; t; t = t->next) {
		int f = 0;
		if (argc > 1 && !strstr(t->name, argv[1]))
			continue;
		t->fn(&f);
		printf("%s %s\n", f ? "not ok" : "ok", t->name);
		fflush(stdout);
		if (f)
			failed++;
		else
			passed++;
	}
	printf("unit: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
