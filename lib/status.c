#include "status.h"

#include "die.h"
#include "fd.h"
#include "json.h"

#include <string.h>
#include <unistd.h>

static int status_fd = -1;
static pid_t owner;
static int exit_written, write_failed, first_written;

int sbx_status_opt(const char *arg)
{
	status_fd = sbx_opt_fd("--status-fd", arg);
	owner = getpid();
	return status_fd;
}

int sbx_status_fd(void)
{
	return status_fd;
}

void sbx_status_disown(void)
{
	owner = 0; /* no process has pid 0 */
}

int sbx_status_first(int fd)
{
	if (fd != status_fd || status_fd < 0 || getpid() != owner || first_written)
		return 0;
	first_written = 1;
	return 1;
}

void sbx_status_exit_on_die(int code, const char *msg)
{
	struct sbx_json j;

	if (status_fd < 0 || exit_written || write_failed || getpid() != owner)
		return;
	sbx_json_begin(&j, sbx_prog(), "exit");
	sbx_json_int(&j, "code", code);
	sbx_json_str(&j, "stage", "setup");
	sbx_json_str(&j, "error", msg);
	/* The failure is already on stderr; an exit line the fd cannot take
	 * is said there too, once, like any other status line: the reader of
	 * the status fd would otherwise see a run end without an exit line
	 * and no word of why. */
	sbx_json_write(&j, status_fd);
}

void sbx_status_wrote(int fd, int is_exit, int ok, int err)
{
	if (fd != status_fd || status_fd < 0 || getpid() != owner)
		return;
	if (ok) {
		if (is_exit)
			exit_written = 1;
		return;
	}
	if (write_failed)
		return;
	write_failed = 1;
	/* A warning, not a failure: the sandbox is still what it claims,
	 * only its report is lost. */
	sbx_msg(SBX_MSG_WARNING, 0, 0, "unable to write a status line to fd %d: %s (said once; later "
		"lines may be lost too)", fd, strerror(err));
}
