/* cg-escape PIDFILE wait|exit: tries to outlive its supervisor the usual
 * ways. A child calls setsid() and forks a grandchild, then exits; the
 * grandchild closes stdin, stdout and stderr (so no pipe keeps anyone
 * waiting), writes its pid to PIDFILE and sleeps forever. The main process
 * then sleeps forever ("wait", for a timeout or cancellation) or exits 0
 * at once ("exit", leaving the grandchild behind). */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int pfd[2];
	char c;
	pid_t p;

	if (argc != 3 || (strcmp(argv[2], "wait") && strcmp(argv[2], "exit"))) {
		fprintf(stderr, "usage: cg-escape PIDFILE wait|exit\n");
		return 100;
	}
	if (pipe(pfd) < 0)
		return 111;
	p = fork();
	if (p < 0)
		return 111;
	if (p == 0) {
		setsid();
		if (fork() == 0) {
			char buf[32];
			int fd, n;
			close(0);
			close(1);
			close(2);
			n = snprintf(buf, sizeof buf, "%d\n", (int)getpid());
			fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
			if (fd < 0 || write(fd, buf, (size_t)n) != n)
				_exit(111);
			close(fd);
			/* Tell the main process the pid file is complete. */
			if (write(pfd[1], "", 1) != 1)
				_exit(111);
			close(pfd[1]);
			for (;;)
				pause();
		}
		_exit(0);
	}
	close(pfd[1]);
	waitpid(p, NULL, 0);
	if (read(pfd[0], &c, 1) != 1)
		return 111;
	if (!strcmp(argv[2], "exit"))
		return 0;
	for (;;)
		pause();
}
