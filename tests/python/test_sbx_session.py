"""contrib/python/sbx_session.py against real living sandboxes.

Run by tests/python/check.sh, as root (whose sandboxes run as the test
user) and as the test user itself. Every test ends with the fds the
process had before it and no child process: each call, each refusal and
each lost sandbox must close and reap what it made. The last line is
"python-IDENTITY: N passed, N failed" (a skip counts as a failure).
"""

import hashlib
import os
import pwd
import select
import shutil
import signal
import socket
import stat
import sys
import tempfile
import threading
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "contrib", "python"))
import sbx_session as sbx  # noqa: E402

SBX_NS = os.path.join(os.environ.get("SBX_BIN") or os.path.join(ROOT, "bin"), "sbx-ns")
USER = pwd.getpwnam("sbxtest")
AS_ROOT = os.geteuid() == 0
# A directory of a third uid (neither the caller nor root), made by
# check.sh, or here when run alone as root.
OTHERS = os.environ.get("SBX_PY_OTHERS_DIR", "")

# A service for the first program to leave running: it echoes what each
# connection sends (one thread a connection).
ECHO = """import socket, threading
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 8000))
s.listen(8)
def echo(c):
    while True:
        b = c.recv(65536)
        if not b:
            break
        c.sendall(b)
    c.close()
while True:
    threading.Thread(target=echo, args=(s.accept()[0],), daemon=True).start()
"""


STOPPED = ("it was stopped: by sbx-ns --join --stop, or by a signal such as the SIGTERM that the end of "
           "the thread that started it sends")


def children():
    """The pids of this process's children, from every thread."""
    kids = []
    for t in os.listdir("/proc/self/task"):
        with open("/proc/self/task/%s/children" % t) as f:
            kids += f.read().split()
    return sorted(kids)


def fds():
    return sorted(os.listdir("/proc/self/fd"))


def pid1(sb):
    """The host pid of the sandbox's pid 1, the server's one child."""
    with open("/proc/%d/task/%d/children" % (sb.pid, sb.pid)) as f:
        kids = f.read().split()
    assert len(kids) == 1, kids
    return int(kids[0])


def wait_dead(pid):
    """Until pid (a child) has ended, without reaping it."""
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)


class SourceTest(unittest.TestCase):
    def test_the_client_is_python_3_9_grammar(self):
        import ast
        with open(sbx.__file__) as f:
            ast.parse(f.read(), sbx.__file__, feature_version=(3, 9))


class SandboxTest(unittest.TestCase):
    def setUp(self):
        # Registered first, run last: after every sandbox's close.
        self.addCleanup(self.no_leaks, fds(), children())
        self.dir = tempfile.mkdtemp(prefix="sbx-py.", dir="/var/tmp")
        self.addCleanup(shutil.rmtree, self.dir)
        os.chmod(self.dir, 0o755)
        self.ws = os.path.join(self.dir, "ws")
        os.mkdir(self.ws, 0o755)
        self.opts = ["--workspace", self.ws, "--ro", self.dir + "/ro"]
        os.mkdir(self.dir + "/ro", 0o755)
        if AS_ROOT:
            os.chown(self.ws, USER.pw_uid, USER.pw_gid)
            self.opts = ["--uid", str(USER.pw_uid), "--gid", str(USER.pw_gid)] + self.opts
        # The sockets' private directories go under a base of the test's.
        self.run_dir = os.path.join(self.dir, "run")
        os.mkdir(self.run_dir, 0o700)
        old = os.environ.get("XDG_RUNTIME_DIR")
        os.environ["XDG_RUNTIME_DIR"] = self.run_dir
        self.addCleanup(self.restore_env, old)

    @staticmethod
    def restore_env(old):
        if old is None:
            os.environ.pop("XDG_RUNTIME_DIR", None)
        else:
            os.environ["XDG_RUNTIME_DIR"] = old

    def no_leaks(self, fds_before, kids_before):
        self.assertEqual(fds(), fds_before, "fds left open")
        self.assertEqual(children(), kids_before, "child processes left")

    def box(self, extra=(), **kw):
        sb = sbx.Sandbox(self.opts + list(extra), sbx_ns=SBX_NS, **kw)
        self.addCleanup(sb.close)
        return sb

    def echo_box(self, **kw):
        with open(self.dir + "/ro/echo.py", "w") as f:
            f.write(ECHO)
        return self.box(["--net", "loopback"], ready_port=8000, init=[
            "sh", "-c", "python3 %s/ro/echo.py </dev/null >/dev/null 2>&1 &" % self.dir], **kw)

    def assertSbx(self, cm, cls, code, message):
        self.assertIs(type(cm.exception), cls)
        self.assertEqual((cm.exception.code, cm.exception.message), (code, message))

    # -- running commands ------------------------------------------------

    def test_run_returns_the_commands_code_stdout_and_stderr(self):
        sb = self.box().start()
        r = sb.run(["sh", "-c", "echo out; echo err >&2; exit 4"])
        self.assertEqual((r.code, r.signal, r.stdout, r.stderr), (4, 0, b"out\n", b"err\n"))
        r = sb.run(["sh", "-c", "kill -9 $$"])
        self.assertEqual((r.code, r.signal, r.stdout, r.stderr), (137, 9, b"", b""))
        r = sb.run(["no-such-program"])
        self.assertEqual((r.code, r.stdout, r.stderr), (127, b"", b"sbx-ns: fatal: unable to find no-such-program\n"))
        r = sb.run(["sh", "-c", 'pwd; echo "$X"'], cwd="/tmp", env={"X": "y z"})
        self.assertEqual((r.code, r.stdout), (0, b"/tmp\ny z\n"))
        # /tmp carries over from one command to the next.
        self.assertEqual(sb.run(["sh", "-c", "echo kept >/tmp/f"]).code, 0)
        self.assertEqual(sb.run(["cat", "/tmp/f"]).stdout, b"kept\n")

    def test_run_passes_stdin_bytes_whole(self):
        sb = self.box().start()
        self.assertEqual(sb.run(["cat"], stdin=b"a\x00b\nc").stdout, b"a\x00b\nc")
        big = os.urandom(3 << 20)
        r = sb.run(["sha256sum"], stdin=big)
        self.assertEqual(r.stdout, hashlib.sha256(big).hexdigest().encode() + b"  -\n")
        self.assertEqual(len(sb.run(["head", "-c", str(5 << 20), "/dev/zero"]).stdout), 5 << 20)
        # No stdin: /dev/null, never the caller's.
        self.assertEqual(sb.run(["wc", "-c"]).stdout, b"0\n")

    def test_a_process_the_command_leaves_running_does_not_hold_the_call(self):
        sb = self.box().start()
        for name in ("go", "done"):
            os.mkfifo(os.path.join(self.ws, name))
            os.chmod(os.path.join(self.ws, name), 0o666)
        # It keeps the command's stdout and stderr: the call still ends
        # with the command, and what it writes there later does not hurt it.
        got = []
        t = threading.Thread(target=lambda: got.append(sb.run(
            ["sh", "-c", "echo hi; (read x <go; echo late; echo late >&2; echo alive >done) & exit 2"])))
        t.start()
        # (bounds, not measures: a call that waits for the left-over
        # process, or a process that a closed pipe killed, never ends)
        t.join(30)
        ended = not t.is_alive()
        done = os.open(os.path.join(self.ws, "done"), os.O_RDONLY | os.O_NONBLOCK)
        try:
            with open(os.path.join(self.ws, "go"), "w") as f:
                f.write("x\n")
            t.join()
            self.assertTrue(ended, "the call waited for the process the command left running")
            r = got[0]
            self.assertEqual((r.code, r.stdout, r.stderr), (2, b"hi\n", b""))
            self.assertEqual(select.select([done], [], [], 30)[0], [done])
            self.assertEqual(os.read(done, 100), b"alive\n")
        finally:
            os.close(done)

    def test_refused_requests_raise_sbx_code_and_message(self):
        sb = self.box().start()
        with self.assertRaises(sbx.SbxError) as cm:
            sb.run(["true"], cwd="rel")
        self.assertSbx(cm, sbx.SbxError, 100, "--cwd: invalid path 'rel': not absolute")
        with self.assertRaises(sbx.SbxError) as cm:
            sb.run(["true"], env={"1X": "v"})
        self.assertSbx(cm, sbx.SbxError, 100, "--setenv: invalid variable '1X=v': bad name")
        with self.assertRaises(sbx.SbxError) as cm:
            sb.run(["true"], timeout=0)
        self.assertSbx(cm, sbx.SbxError, 100, "--timeout: invalid duration '0': zero not allowed")
        with self.assertRaises(sbx.SbxError) as cm:
            sb.run([])
        self.assertSbx(cm, sbx.SbxError, 100, "missing program")
        with self.assertRaises(TypeError):
            sb.run("true")
        with self.assertRaises(sbx.SbxError) as cm:
            sb.run(["echo", "a\0b"])
        self.assertSbx(cm, sbx.SbxError, 100, "invalid argument: embedded null byte")
        # A name from the caller with an escape sequence: the message keeps
        # it, the exception's text (what a terminal shows) quotes it.
        with self.assertRaises(sbx.SbxError) as cm:
            sb.run(["true"], env={"\x1b[2J": "v"})
        self.assertSbx(cm, sbx.SbxError, 100, "--setenv: invalid variable '\x1b[2J=v': bad name")
        self.assertEqual(str(cm.exception), "--setenv: invalid variable '\\x1b[2J=v': bad name (100)")
        # The sandbox serves on after each refusal.
        self.assertEqual(sb.run(["true"]).code, 0)

    def test_timeout_is_sbx_104_and_a_command_saying_so_is_not(self):
        sb = self.box().start()
        with self.assertRaises(sbx.CommandKilled) as cm:
            sb.run(["sh", "-c", "echo before; sleep 100 & sleep 100"], timeout=0.3)
        self.assertSbx(cm, sbx.CommandKilled, 104, "its --timeout expired: killed with its process group")
        r = cm.exception.result
        self.assertEqual((r.code, r.signal, r.stdout), (104, 9, b"before\n"))
        # The command's own stderr cannot forge it: only sbx-ns's exit line
        # says what sbx killed.
        r = sb.run(["sh", "-c", 'echo "sbx-ns: killed: its --timeout expired: killed with its process group" >&2; exit 104'])
        self.assertEqual((r.code, r.signal), (104, 0))
        # Both sleeps went with the process group.
        self.assertEqual(sb.run(["sh", "-c", "pgrep -c sleep || :"]).stdout, b"0\n")

    # -- jobs --------------------------------------------------------------

    def test_jobs_start_wait_list_and_kill(self):
        sb = self.box().start()
        j = sb.start_job(["sh", "-c", "exit 5"])
        self.assertEqual(sb.wait_job(j), 5)
        self.assertEqual(sb.wait_job(j), 5)
        k = sb.start_job(["sleep", "100"])
        # The client stops waiting; the job runs on.
        with self.assertRaises(TimeoutError):
            sb.wait_job(k, timeout=0.2)
        self.assertEqual([(x.id, x.state, x.code, x.argv) for x in sb.jobs()],
                         [(j, "ended", 5, "sh -c exit 5"), (k, "running", None, "sleep 100")])
        sb.kill_job(k, signal.SIGTERM)
        self.assertEqual(sb.wait_job(k), 143)
        sb.kill_job(k)  # an ended job: nothing, no error
        n = sb.start_job(["sh", "-c", "echo logged; echo also >&2"], stdout="/tmp/j.log", stderr="/tmp/j.log")
        self.assertEqual(sb.wait_job(n), 0)
        self.assertEqual(sb.run(["cat", "/tmp/j.log"]).stdout, b"logged\nalso\n")
        with self.assertRaises(sbx.SbxError) as cm:
            sb.wait_job(999)
        self.assertSbx(cm, sbx.SbxError, 100, "no job 999 in this sandbox (sbx-ns --join PATH --jobs lists them)")
        with self.assertRaises(sbx.SbxError) as cm:
            sb.start_job(["true"], stdout="rel", stderr="rel")
        self.assertSbx(cm, sbx.SbxError, 100, "--stdout: invalid path 'rel': not absolute")

    # -- connect -----------------------------------------------------------

    def test_connect_hands_back_a_socket_to_a_port_inside(self):
        sb = self.echo_box().start()
        a, b = sb.connect(8000), sb.connect(8000)
        try:
            a.sendall(b"ping")
            b.sendall(b"pong")
            self.assertEqual((a.recv(4), b.recv(4)), (b"ping", b"pong"))
            self.assertEqual(a.family, socket.AF_INET)
        finally:
            a.close()
            b.close()
        with self.assertRaises(sbx.SbxError) as cm:
            sb.connect(8001)
        self.assertSbx(cm, sbx.SbxError, 111, "unable to connect to 127.0.0.1:8001 in the sandbox: Connection refused")
        with self.assertRaises(sbx.SbxError) as cm:
            sb.connect(0)
        self.assertSbx(cm, sbx.SbxError, 100, "--connect: invalid number '0': zero not allowed")

    def test_connect_needs_the_sandboxs_own_loopback(self):
        sb = self.box().start()
        with self.assertRaises(sbx.SbxError) as cm:
            sb.connect(8000)
        self.assertSbx(cm, sbx.SbxError, 100,
                       "--connect needs a sandbox with its own loopback (--net loopback or --net broker)")

    # -- the end -----------------------------------------------------------

    def test_stop_ends_every_process_and_removes_the_socket_and_its_directory(self):
        sb = self.box().start()
        d, one, server = os.path.dirname(sb.path), pid1(sb), sb.pid
        self.assertEqual(os.path.dirname(d), self.run_dir)
        self.assertEqual(stat.S_IMODE(os.stat(d).st_mode), 0o700)
        sb.start_job(["sleep", "100"])
        self.assertEqual(sb.stop(), 0)
        self.assertFalse(os.path.exists(d))
        self.assertFalse(os.path.exists("/proc/%d" % one))
        self.assertEqual(sb.stop(), 0)
        with self.assertRaises(sbx.SandboxLost) as cm:
            sb.run(["true"])
        self.assertSbx(cm, sbx.SandboxLost, 103, "sbx-ns --serve %s (pid %d) exited 0: the sandbox is gone "
                       "(%s)" % (sb.path, server, STOPPED))

    def test_a_server_stops_when_the_thread_that_started_it_ends(self):
        sb = self.box()
        t = threading.Thread(target=sb.start)
        t.start()
        t.join()
        wait_dead(sb.pid)
        with self.assertRaises(sbx.SandboxLost) as cm:
            sb.run(["true"])
        self.assertSbx(cm, sbx.SandboxLost, 103, "sbx-ns --serve %s (pid %d) exited 0: the sandbox is gone "
                       "(%s)" % (sb.path, sb.pid, STOPPED))
        self.assertFalse(os.path.exists(sb.path))

    def test_a_killed_server_raises_on_the_next_call_and_its_socket_goes_at_close(self):
        sb = self.box().start()
        os.kill(sb.pid, signal.SIGKILL)
        wait_dead(sb.pid)
        for _ in range(2):
            with self.assertRaises(sbx.SandboxLost) as cm:
                sb.run(["true"])
            self.assertSbx(cm, sbx.SandboxLost, 103,
                           "sbx-ns --serve %s (pid %d) was killed by SIGKILL: the sandbox is gone" % (sb.path, sb.pid))
        # What a killed server leaves: its socket, nothing serving it.
        self.assertTrue(stat.S_ISSOCK(os.lstat(sb.path).st_mode))
        with self.assertRaises(sbx.SandboxLost):
            sb.stop()
        self.assertFalse(os.path.exists(os.path.dirname(sb.path)))

    def test_a_server_killed_during_a_call_raises_sbxs_lost(self):
        sb = self.box().start()
        fifo = os.path.join(self.ws, "started")
        os.mkfifo(fifo)
        os.chmod(fifo, 0o666)
        got = []

        def call():
            try:
                sb.run(["sh", "-c", "echo >started; sleep 100"])
            except sbx.SbxError as e:
                got.append(e)
        t = threading.Thread(target=call)
        t.start()
        with open(fifo) as f:
            f.read()
        os.kill(sb.pid, signal.SIGKILL)
        t.join()
        self.assertEqual([(type(e), e.code, e.message) for e in got],
                         [(sbx.SandboxLost, 103, "the sandbox was lost (its sbx-ns --serve ended)")])

    def test_a_lost_pid_1_raises_the_servers_own_words(self):
        sb = self.box().start()
        os.kill(pid1(sb), signal.SIGKILL)
        wait_dead(sb.pid)
        with self.assertRaises(sbx.SandboxLost) as cm:
            sb.run(["true"])
        self.assertSbx(cm, sbx.SandboxLost, 103,
                       "sbx-ns --serve %s (pid %d) exited 103: the sandbox is gone "
                       "(the sandbox was lost: its pid 1 ended (Killed))" % (sb.path, sb.pid))
        self.assertEqual(cm.exception.server_stderr, "sbx-ns: fatal: the sandbox was lost: its pid 1 ended (Killed)")

    # -- never ready -------------------------------------------------------

    def test_a_sandbox_that_never_becomes_ready_raises_with_its_stderr(self):
        sb = self.box(init=["sleep", "100"], ready_timeout=0.5)
        with self.assertRaises(sbx.SandboxNotReady) as cm:
            sb.start()
        why = "the sandbox did not become ready within 0.500 s: the first program did not end (--ready-timeout)"
        self.assertSbx(cm, sbx.SandboxNotReady, 103, why)
        self.assertEqual(cm.exception.server_stderr, "sbx-ns: fatal: " + why)
        self.assertFalse(os.path.exists(os.path.dirname(sb.path)))
        with self.assertRaises(sbx.SbxError) as cm:
            sb.run(["true"])
        self.assertEqual(cm.exception.code, 103)

    def test_a_port_that_never_answers_and_a_failing_initializer_are_not_ready(self):
        sb = self.box(["--net", "loopback"], ready_port=8000, ready_timeout=0.3)
        with self.assertRaises(sbx.SandboxNotReady) as cm:
            sb.start()
        self.assertSbx(cm, sbx.SandboxNotReady, 103, "the sandbox did not become ready within 0.300 s: nothing "
                       "accepted a connection on its 127.0.0.1:8000 (--ready-port, --ready-timeout)")
        sb = self.box(init=["sh", "-c", "echo init-out; echo init-err >&2; exit 3"])
        with self.assertRaises(sbx.SandboxNotReady) as cm:
            sb.start()
        self.assertSbx(cm, sbx.SandboxNotReady, 3, "the first program (sh -c echo init-out; echo init-err >&2; exit 3) exited 3")
        self.assertEqual(cm.exception.server_stderr, "init-out\ninit-err\nsbx-ns: warning: the first program "
                         "(sh -c echo init-out; echo init-err >&2; exit 3) exited 3: the sandbox stops")
        sb = self.box(["--net", "bogus"])
        with self.assertRaises(sbx.SandboxNotReady) as cm:
            sb.start()
        self.assertSbx(cm, sbx.SandboxNotReady, 100,
                       "--net: invalid mode 'bogus' (none, loopback, broker:PATH[,transparent][,port=N], host)")
        sb = self.box()
        with self.assertRaises(sbx.SbxError) as cm:
            sb.run(["true"])
        self.assertSbx(cm, sbx.SbxError, 100, "the sandbox is not ready: call start() (or launch() and wait_ready())")

    # -- PATH ------------------------------------------------------------

    def refused(self, path, message, cls=sbx.SandboxNotReady, code=100):
        sb = self.box(path=path)
        with self.assertRaises(sbx.SbxError) as cm:
            sb.start()
        self.assertSbx(cm, cls, code, message)

    def test_a_path_it_cannot_own_is_refused_by_sbx_ns(self):
        # /tmp: root's, and writable by everyone.
        self.refused("/tmp/sbx-py-sock", "--serve: invalid path '/tmp/sbx-py-sock': others may write "
                     "the directory /tmp (chmod go-w /tmp)" if AS_ROOT else "--serve: invalid path "
                     "'/tmp/sbx-py-sock': the directory /tmp is not the caller's (uid %d); use a directory "
                     "of your own such as $XDG_RUNTIME_DIR" % os.geteuid())
        self.refused(OTHERS + "/sock", "--serve: invalid path '%s/sock': the directory %s is not the caller's "
                     "(uid %d); use a directory of your own such as $XDG_RUNTIME_DIR" % (OTHERS, OTHERS, os.geteuid()))
        self.refused("rel/sock", "--serve: invalid path 'rel/sock': not absolute")
        os.symlink(self.run_dir, self.dir + "/link")
        self.refused(self.dir + "/link/sock", "--serve: invalid path '%s/link/sock': its directory is not "
                     "canonical (a symlink, . or ..)" % self.dir)
        self.refused(self.ws + "/sock", "--serve: invalid path '%s/sock': the directory %s is not the caller's "
                     "(uid 0); use a directory of your own such as $XDG_RUNTIME_DIR" % (self.ws, self.ws)
                     if AS_ROOT else "--serve: invalid path '%s/sock': inside --workspace %s, which the sandbox "
                     "sees (the command could connect to it)" % (self.ws, self.ws))
        # A socket nothing serves (a killed sandbox's) stays for its owner.
        stale = self.run_dir + "/stale"
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.bind(stale)
        s.close()
        self.refused(stale, "--serve: invalid path '%s': exists, a socket nothing serves (left by a killed "
                     "sandbox: remove it)" % stale)
        self.assertTrue(stat.S_ISSOCK(os.lstat(stale).st_mode))

    def test_a_path_served_by_another_sandbox_is_refused_and_left_alone(self):
        first = self.box(path=self.run_dir + "/s").start()
        self.refused(first.path, "--serve: invalid path '%s': a sandbox is serving there (sbx-ns --join %s "
                     "--stop stops it)" % (first.path, first.path))
        self.assertEqual(first.run(["echo", "still"]).stdout, b"still\n")

    def test_the_socket_base_must_be_one_others_cannot_rename_in(self):
        open_dir = self.dir + "/open"
        os.mkdir(open_dir)
        os.chmod(open_dir, 0o777)
        os.environ["XDG_RUNTIME_DIR"] = open_dir
        self.refused(None, "the socket's base directory %s is writable by others and not sticky "
                     "(chmod +t or go-w %s, or give path)" % (open_dir, open_dir), sbx.SbxError)
        self.assertEqual(os.listdir(open_dir), [])
        os.environ["XDG_RUNTIME_DIR"] = OTHERS
        self.refused(None, "the socket's base directory %s is not the caller's (uid %d) nor root's "
                     "(set XDG_RUNTIME_DIR to a directory of yours, or give path)" % (OTHERS, os.geteuid()),
                     sbx.SbxError)
        os.environ["XDG_RUNTIME_DIR"] = "rel"
        self.refused(None, "the socket's base directory 'rel' is not absolute (set XDG_RUNTIME_DIR or TMPDIR "
                     "to an absolute directory, or give path)", sbx.SbxError)
        # A sticky directory anyone writes (/tmp) is a base: the private
        # directory made in it is the caller's, 0700.
        os.environ["XDG_RUNTIME_DIR"] = "/tmp"
        sb = self.box().start()
        st = os.lstat(os.path.dirname(sb.path))
        self.assertEqual((st.st_uid, stat.S_IMODE(st.st_mode)), (os.geteuid(), 0o700))
        self.assertEqual(sb.stop(), 0)

    # -- a session's lifecycle -------------------------------------------

    def test_parallel_launch_continues_past_a_failed_sandbox(self):
        shared = self.dir + "/shared"
        os.mkdir(shared, 0o777)
        os.chmod(shared, 0o777)
        vol = ["--bind", shared, "/shared"]
        boxes = {
            "main": self.box(vol, init=["sh", "-c", "echo main >/shared/main"]),
            "broken": self.box(vol + ["--ro-bind", self.dir + "/missing", "/missing"]),
            "echo": self.echo_box(),
        }
        for b in boxes.values():
            b.launch()
        failed = {}
        for name, b in boxes.items():
            try:
                b.wait_ready()
            except sbx.SandboxNotReady as e:
                failed[name] = (e.code, e.message)
        self.assertEqual(failed, {"broken": (100, "--ro-bind: invalid path '%s/missing': does not exist" % self.dir)})
        self.assertEqual(boxes["main"].run(["cat", "/shared/main"]).stdout, b"main\n")
        with boxes["echo"].connect(8000) as c:
            c.sendall(b"x")
            self.assertEqual(c.recv(1), b"x")
        for b in boxes.values():
            b.close()

    def test_the_servers_output_goes_to_a_log_of_the_callers(self):
        log = os.path.join(self.dir, "log")
        with open(log, "wb") as f:
            sb = self.box(init=["sh", "-c", "echo from-init; echo to-err >&2"], log=f).start()
            self.assertEqual(sb.stop(), 0)
        with open(log, "rb") as f:
            self.assertEqual(f.read(), b"from-init\nto-err\n")

    def test_200_calls_leave_no_fd_and_no_process(self):
        sb = self.echo_box().start()
        before, kids = fds(), children()
        calls = 0
        while calls < 200:
            k = calls % 8
            if k == 0:
                self.assertEqual(sb.run(["cat"], stdin=b"%d" % calls).stdout, b"%d" % calls)
            elif k == 1:
                self.assertEqual(sb.run(["sh", "-c", "exit 3"]).code, 3)
            elif k == 2:
                with self.assertRaises(sbx.SbxError):
                    sb.run(["true"], cwd="rel")
            elif k == 3:
                self.assertEqual(sb.wait_job(sb.start_job(["true"])), 0)
                calls += 1
            elif k == 4:
                self.assertEqual(len(sb.jobs()), sb.jobs()[-1].id)
                calls += 1
            elif k == 5:
                with sb.connect(8000) as c:
                    c.sendall(b"y")
                    self.assertEqual(c.recv(1), b"y")
            elif k == 6:
                with self.assertRaises(sbx.SbxError):
                    sb.connect(8001)
            else:
                with self.assertRaises(sbx.CommandKilled):
                    sb.run(["sleep", "10"], timeout=0.01)
            calls += 1
        self.assertEqual(fds(), before)
        self.assertEqual(children(), kids)
        self.assertEqual(children(), [str(sb.pid)])


def main():
    identity = "root" if AS_ROOT else "user"
    if not OTHERS:
        print("python-%s: SBX_PY_OTHERS_DIR: a directory of a third uid is needed (tests/python/check.sh makes one)"
              % identity, file=sys.stderr)
        print("python-%s: 0 passed, 1 failed" % identity)
        return 1
    suite = unittest.defaultTestLoader.loadTestsFromModule(sys.modules[__name__])
    res = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(suite)
    bad = len(res.failures) + len(res.errors) + len(res.skipped) + len(res.unexpectedSuccesses)
    print("python-%s: %d passed, %d failed" % (identity, res.testsRun - bad, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
