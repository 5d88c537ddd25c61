"""Living sbx sandboxes for an agent runtime, from Python.

Copy this one file into a runtime; it needs the standard library only
(Python 3.9 or later) and sbx-ns on the host. Every call runs sbx-ns as a
subprocess (``--serve`` once, then one ``--join`` per call) and reads its
exit line from ``--status-fd``; nothing here speaks sbx's socket protocol.

    with Sandbox(["--workspace", ws, "--net", "loopback"]) as sb:
        sb.start()
        r = sb.run(["python3", "-c", "print(6 * 7)"])
        print(r.code, r.stdout)        # 0 b'42\\n'

What sbx reports as its own (a refused request, a limit or a timeout that
killed the command, a sandbox that is gone) is raised as an SbxError that
carries sbx's exit code and its words; the command's own exit code, even
126, 127 or 128+N, is returned in a Result. Every call reaps every child
it starts and closes every fd it opens, on every path out.

A server stops when the thread that started it ends (sbx-ns sets the
parent-death signal, and Linux takes the parent to be that thread): start
a sandbox from a thread that lives as long as the sandbox, such as the
main thread or the event loop's.
"""

import errno
import fcntl
import json
import os
import select
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time

__all__ = [
    "Sandbox", "Result", "Job", "SbxError", "SandboxNotReady", "SandboxLost",
    "CommandKilled",
    "EXIT_USAGE", "EXIT_UNSUPPORTED", "EXIT_POLICY", "EXIT_LOST", "EXIT_TIMEOUT",
    "EXIT_OOM", "EXIT_NOISOLATION", "EXIT_SYS", "EXIT_EXEC", "EXIT_NOTFOUND",
]

# sbx's exit codes (lib/exitcodes.h); 128+N is a command killed by signal N.
EXIT_USAGE = 100        # a refused request or bad option: nothing ran
EXIT_UNSUPPORTED = 101  # a hard limit this host cannot enforce
EXIT_POLICY = 102       # refused by policy, or a protected path left live
EXIT_LOST = 103         # the sandbox is gone, or a limit ended the command
EXIT_TIMEOUT = 104      # a --timeout expired
EXIT_OOM = 105          # the OOM killer ended it in its own cgroup
EXIT_NOISOLATION = 106  # namespaces cannot be had here
EXIT_SYS = 111          # a system call failed
EXIT_EXEC = 126         # the program could not be executed
EXIT_NOTFOUND = 127     # the program was not found

# How long past sbx's own bound (its --ready-timeout, the command's
# --timeout) the client waits before it gives up on sbx-ns itself.
_GRACE = 10.0
# How long a request that sbx answers at once (--jobs, --stop, --connect)
# may take before the client gives up on it.
_ANSWER = 30.0
# The server's status lines go to a file of the client's: past this size
# it is emptied (only the last exit line matters).
_STATUS_MAX = 1 << 20
# The part of the server's stderr an exception quotes.
_TAIL = 4096
# The end of the status file where the server's exit line is (a line
# holds at most about 13 KiB: a 2 KiB reason, every byte escaped).
_STATUS_TAIL = 1 << 16


class SbxError(Exception):
    """sbx refused or failed: ``code`` is sbx's exit code (None only when
    the client itself gave up waiting for sbx-ns) and ``message`` sbx's
    words; ``server_stderr`` is the end of the server's stderr where it
    tells more (empty otherwise)."""

    def __init__(self, code, message, server_stderr=""):
        self.code = code
        self.message = message
        self.server_stderr = server_stderr
        text = _quote(message) if code is None else "%s (%d)" % (_quote(message), code)
        if server_stderr:
            text += "\nthe server's stderr ends with:\n" + _quote(server_stderr, keep="\n")
        super().__init__(text)


def _quote(text, keep=""):
    """Text as sbx writes it to a terminal: a control character becomes
    \\xNN, since sbx's words name things from untrusted places (a program's
    name, a variable's, a path) that may hold escape sequences. The
    exception's attributes keep the text itself."""
    return "".join("\\x%02x" % ord(c) if (ord(c) < 0x20 or 0x7f <= ord(c) < 0xa0) and c not in keep else c
                   for c in text)


class SandboxNotReady(SbxError):
    """The sandbox never became ready: sbx-ns --serve ended (or the
    client's own bound passed) before its ready fd got its newline."""


class SandboxLost(SbxError):
    """The sandbox is gone: its server ended, was killed, or stopped."""


class CommandKilled(SbxError):
    """sbx ended the command: its --timeout (104), its --memory (105) or
    --pids (103) limit. ``result`` holds what it wrote until then."""

    def __init__(self, code, message, result):
        super().__init__(code, message)
        self.result = result


class Result:
    """A command's end: its exit code (128+N when signal N killed it),
    ``signal`` (N, or 0) and what it wrote."""

    __slots__ = ("code", "stdout", "stderr", "signal")

    def __init__(self, code, stdout, stderr, sig=0):
        self.code = code
        self.stdout = stdout
        self.stderr = stderr
        self.signal = sig

    def __repr__(self):
        return "Result(code=%d, signal=%d, stdout=%r, stderr=%r)" % (
            self.code, self.signal, self.stdout, self.stderr)


class Job:
    """One line of ``sbx-ns --join PATH --jobs``: ``code`` is None while
    the job runs; ``argv`` is sbx's escaped text, cut at about 120 bytes."""

    __slots__ = ("id", "state", "code", "argv")

    def __init__(self, id, state, code, argv):
        self.id = id
        self.state = state
        self.code = code
        self.argv = argv

    def __repr__(self):
        return "Job(id=%d, state=%r, code=%r, argv=%r)" % (
            self.id, self.state, self.code, self.argv)


def _seconds(v, what):
    """A duration as sbx-ns takes it: the caller's text, or an int or a
    float written out in full (sbx-ns checks the value, not the client)."""
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise TypeError("%s must be a number of seconds, not %r" % (what, v))
    return str(v)


def _bound(v, default):
    """The client's own bound for a wait that sbx bounds with v."""
    try:
        return float(v) + _GRACE
    except (TypeError, ValueError):
        return default + _GRACE


def _high(fd):
    """fd, moved above 2 if it is not (an fd option names fds 3 and up):
    a runtime may run with 0, 1 or 2 closed, and os.pipe then fills them."""
    if fd > 2:
        return fd
    new = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    os.close(fd)
    return new


def _exit_line(data):
    """The last exit line of sbx-ns's status output, as a dict, or None."""
    last = None
    for line in data.splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if isinstance(ev, dict) and ev.get("event") == "exit":
            last = ev
    return last


def _read_nonblocking(fd):
    """What a pipe holds once its writer has exited. Non-blocking: a
    process the writer left holding the write end never hangs the call."""
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)
    chunks = []
    while True:
        try:
            b = os.read(fd, 65536)
        except BlockingIOError:
            break
        if not b:
            break
        chunks.append(b)
    return b"".join(chunks)


def _reap(proc):
    """Kill and reap a child the client started (its pid is still its
    own until it is reaped, so the signal reaches no other process)."""
    if proc.poll() is None:
        try:
            proc.kill()
        except ProcessLookupError:
            pass
    proc.wait()


def _spawn(argv, **kw):
    """subprocess.Popen, with sbx-ns that cannot be run an SbxError too."""
    try:
        return subprocess.Popen(argv, close_fds=True, **kw)
    except ValueError as e:  # a NUL in an argument
        raise SbxError(EXIT_USAGE, "invalid argument: %s" % e) from None
    except OSError as e:
        code = EXIT_NOTFOUND if e.errno == errno.ENOENT else EXIT_EXEC
        raise SbxError(code, "unable to run %s: %s" % (argv[0], e.strerror)) from None


def _signame(n):
    try:
        return signal.Signals(n).name
    except ValueError:
        return "signal %d" % n


def _private_base():
    """Where the client makes the socket's directory when it is given no
    PATH: $XDG_RUNTIME_DIR, else the temporary directory. mkdtemp makes a
    new 0700 directory there, so the base may be shared, but only if no
    one but the caller and root can remove or rename what is in it: owned
    by the caller or root, and not writable by others unless sticky."""
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    if not os.path.isabs(base):
        raise SbxError(EXIT_USAGE, "the socket's base directory %r is not absolute "
                       "(set XDG_RUNTIME_DIR or TMPDIR to an absolute directory, or give path)" % base)
    base = os.path.realpath(base)
    try:
        st = os.lstat(base)
    except OSError as e:
        raise SbxError(EXIT_USAGE, "the socket's base directory %s: %s "
                       "(set XDG_RUNTIME_DIR or TMPDIR to a directory of yours, or give path)"
                       % (base, e.strerror)) from None
    if not stat.S_ISDIR(st.st_mode):
        raise SbxError(EXIT_USAGE, "the socket's base directory %s is not a directory" % base)
    if st.st_uid not in (os.geteuid(), 0):
        raise SbxError(EXIT_USAGE, "the socket's base directory %s is not the caller's (uid %d) "
                       "nor root's (set XDG_RUNTIME_DIR to a directory of yours, or give path)"
                       % (base, os.geteuid()))
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
        raise SbxError(EXIT_USAGE, "the socket's base directory %s is writable by others and not "
                       "sticky (chmod +t or go-w %s, or give path)" % (base, base))
    return base


# --connect's host program: hands the connected socket (fd 3) back to the
# client over its stdout, a Unix socket of the client's.
_HANDBACK = ("import socket\n"
             "s = socket.socket(fileno=1)\n"
             "socket.send_fds(s, [b'c'], [3])\n")


class Sandbox:
    """One living sandbox: ``sbx-ns [options] --serve PATH [-- init...]``.

    options   sbx-ns's run options, as a list of words (--workspace DIR,
              --net MODE, --bind SRC DEST, --uid/--gid as root, ...);
              sbx-ns checks every one.
    init      the first program's argv (an initializer): the sandbox is
              ready once it has exited 0.
    path      the control socket; None: a new private directory of the
              caller's (made by the client, removed by close) holds it.
    ready_port, ready_timeout
              sbx-ns --ready-port and --ready-timeout (default 30 s):
              ready also needs 127.0.0.1:PORT to accept inside.
    sbx_ns    the sbx-ns to run (default: found on PATH).
    log       where the server's stdout and stderr go (an open file or
              fd, kept open by the caller); None: an unlinked temporary
              file of the client's, quoted in exceptions. It grows with
              every warning the server writes: give a file of your own
              for a long session.
    """

    def __init__(self, options=(), init=None, path=None, ready_port=None,
                 ready_timeout=30, sbx_ns="sbx-ns", log=None):
        if isinstance(options, (str, bytes)):
            raise TypeError("options must be a list of words, not one string")
        self.options = [os.fspath(o) for o in options]
        self.init = None if init is None else [os.fspath(a) for a in init]
        self.path = None if path is None else os.fspath(path)
        self.ready_port = ready_port
        self.ready_timeout = ready_timeout
        self.sbx_ns = sbx_ns
        self._log_given = log
        self._log_fd = -1
        self._status_fd = -1
        self._ready_fd = -1
        self._dir = None
        self._proc = None
        self._sock_id = None
        self._ready = False
        self._ended = None
        # Held while the client's own fds are used or closed: a call in
        # one thread never reads or truncates an fd number that a stop in
        # another has closed (and the process may have reused).
        self._lock = threading.RLock()

    # -- the server ------------------------------------------------------

    def launch(self):
        """Start the server and return at once (launch several, then
        wait_ready each: they set up in parallel)."""
        if self._proc is not None:
            raise SbxError(EXIT_USAGE, "this sandbox was launched already")
        w_ready = -1
        try:
            if self.path is None:
                base = _private_base()
                try:
                    self._dir = tempfile.mkdtemp(prefix="sbx-", dir=base)
                except OSError as e:
                    raise SbxError(EXIT_SYS, "unable to create a directory in %s: %s" % (base, e.strerror)) from None
                self.path = os.path.join(self._dir, "sock")
            self._status_fd = self._tmpfile()
            if self._log_given is None:
                self._log_fd = self._tmpfile()
                log = self._log_fd
            else:
                log = self._log_given
            r, w_ready = os.pipe()
            self._ready_fd = _high(r)
            w_ready = _high(w_ready)
            # Our own options first: a "--" or a bare word in the
            # caller's options can only end them, never drop --serve;
            # --status-fd before all, so a refusal of any later option
            # (--serve's PATH among them) is an exit line.
            argv = [self.sbx_ns, "--status-fd", str(self._status_fd), "--ready-fd", str(w_ready),
                    "--serve", self.path, "--ready-timeout", _seconds(self.ready_timeout, "ready_timeout")]
            if self.ready_port is not None:
                argv += ["--ready-port", str(self.ready_port)]
            argv += self.options
            if self.init is not None:
                argv += ["--"] + self.init
            # A session of its own: a terminal's ^C to the runtime's group
            # does not stop the sandbox behind the runtime's back.
            self._proc = _spawn(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                pass_fds=(w_ready, self._status_fd), start_new_session=True)
        except BaseException:
            self._release()
            raise
        finally:
            if w_ready >= 0:
                os.close(w_ready)
        return self

    def wait_ready(self):
        """Wait until the sandbox is ready (sbx-ns writes its ready fd's
        newline), at most ready_timeout plus a grace; raise
        SandboxNotReady, with sbx's code, words and stderr, otherwise."""
        if self._ready:
            return self
        if self._proc is None or self._ready_fd < 0:
            raise SbxError(EXIT_USAGE, "wait_ready: the sandbox was not launched")
        bound = _bound(self.ready_timeout, 30)
        deadline = time.monotonic() + bound
        got = None
        try:
            p = select.poll()
            p.register(self._ready_fd, select.POLLIN)
            while got is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                if p.poll(left * 1000):
                    got = os.read(self._ready_fd, 1)
        except BaseException:
            self._abandon()
            raise
        os.close(self._ready_fd)
        self._ready_fd = -1
        if got == b"\n":
            self._ready = True
            try:
                st = os.lstat(self.path)
                self._sock_id = (st.st_dev, st.st_ino)
            except OSError:
                pass
            os.ftruncate(self._status_fd, 0)
            return self
        if got is None:
            # sbx-ns bounds its own wait: one that outlives it is stuck.
            self._abandon()
            raise SandboxNotReady(None, "sbx-ns --serve %s was not ready within %gs, %gs past its "
                                  "--ready-timeout; the client killed it" % (self.path, bound, _GRACE),
                                  self._log_tail())
        # Closed without the newline: sbx-ns is ending and says why.
        try:
            try:
                self._proc.wait(_ANSWER)
            except subprocess.TimeoutExpired:
                self._terminate()
            code, why = self._server_end()
            if not why:
                why = "sbx-ns --serve %s %s before it was ready" % (self.path, self._how())
            tail = self._log_tail()
        finally:
            self._abandon()
        raise SandboxNotReady(code, why, tail)

    def start(self):
        """launch, then wait_ready."""
        return self.launch().wait_ready()

    def stop(self):
        """Stop the sandbox (every process in it ends, its end check runs,
        PATH goes), wait for the server, release everything; return the
        server's code (0). Raise SandboxLost if it had ended already, or
        SbxError if the end check left a protected path live (102)."""
        with self._lock:
            if self._ended is not None:
                return self._ended
            if self._proc is None:
                self._ended = 0
                self._release()
                return 0
            lost = None
            try:
                lost = self._dead()
                if lost is None and not self._ready:
                    self._terminate()
                elif lost is None:
                    try:
                        ev, _, _, _ = self._join(["--stop"], timeout=_ANSWER)
                    except SbxError as e:
                        lost = e
                    else:
                        if ev.get("error"):
                            lost = SandboxLost(ev.get("code"), ev["error"])
                try:
                    self._proc.wait(_ANSWER)
                except subprocess.TimeoutExpired:
                    self._terminate()
                code, why = self._server_end()
                tail = self._log_tail()
            finally:
                self._abandon()
            self._ended = code
            if lost is not None:
                raise lost
            if code != 0:
                raise SbxError(code, why or "sbx-ns --serve %s %s" % (self.path, self._how()), tail)
            return code

    def close(self):
        """stop, for cleanup: a sandbox already gone raises nothing."""
        try:
            self.stop()
        except SandboxLost:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def pid(self):
        """The serving sbx-ns's pid (None before launch)."""
        return None if self._proc is None else self._proc.pid

    # -- calls -----------------------------------------------------------

    def run(self, argv, stdin=None, timeout=None, cwd=None, env=None):
        """Run argv in the sandbox; return its Result. stdin: bytes (or
        None: /dev/null). timeout: seconds, sbx-ns --join --timeout (sbx
        kills the command's process group: CommandKilled, 104). cwd: a
        directory inside. env: variables added for this command only."""
        opts = self._run_opts(timeout, cwd, env)
        ev, out, err, _ = self._join(opts + ["--"] + self._argv(argv), stdin=stdin,
                                     timeout=None if timeout is None else _bound(timeout, 0))
        return self._outcome(ev, out, err)

    def start_job(self, argv, stdout="/dev/null", stderr="/dev/null", cwd=None, env=None):
        """Start argv as a job tied to no client (--detach); return its id.
        stdout and stderr are files inside the sandbox."""
        opts = ["--detach", "--stdout", stdout, "--stderr", stderr] + self._run_opts(None, cwd, env)
        ev, out, err, _ = self._join(opts + ["--"] + self._argv(argv), timeout=_ANSWER)
        res = self._outcome(ev, out, err)
        try:
            return int(res.stdout.decode().strip())
        except ValueError:
            raise SbxError(res.code, "sbx-ns --join --detach printed no job id: %r" % res.stdout) from None

    def wait_job(self, job_id, timeout=None):
        """Wait for job job_id to end and return its code (128+N for
        signal N). timeout: seconds the client waits; past it the waiting
        stops (TimeoutError) and the job runs on."""
        ev, out, err, _ = self._join(["--wait-job", str(int(job_id))], timeout=timeout,
                                     on_timeout=TimeoutError("job %d still runs after %ss" % (job_id, timeout)))
        return self._outcome(ev, out, err).code

    def kill_job(self, job_id, sig=signal.SIGTERM):
        """Send sig to job job_id's process group (an ended job: nothing)."""
        self._outcome(*self._join(["--kill-job", str(int(job_id)), "--signal", str(int(sig))],
                                  timeout=_ANSWER)[:3])

    def jobs(self):
        """The jobs, as Job objects, in sbx's order."""
        ev, out, err, _ = self._join(["--jobs"], timeout=_ANSWER)
        res = self._outcome(ev, out, err)
        jobs = []
        for line in res.stdout.decode(errors="replace").splitlines():
            f = line.split(" ", 3)
            if len(f) < 3:
                continue
            jobs.append(Job(int(f[0]), f[1], None if f[2] == "-" else int(f[2]), f[3] if len(f) > 3 else ""))
        return jobs

    def connect(self, port, timeout=_ANSWER):
        """A socket.socket connected to 127.0.0.1:port inside the sandbox
        (sbx-ns --join --connect): pid 1 connects, and the socket comes
        to the client through a host program of its own; no process
        copies bytes between the two."""
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        fd = -1
        try:
            mine.settimeout(timeout)
            hostprog = [sys.executable or "python3", "-I", "-S", "-c", _HANDBACK]
            ev, out, err, fds = self._join(["--connect", str(int(port)), "--"] + hostprog,
                                           timeout=timeout, stdout=theirs, handback=mine)
            # On success sbx-ns became the host program (no exit line);
            # a refusal or a failed connect is its exit line.
            fd = fds[0] if fds else -1
            if fd < 0:
                res = self._outcome(ev, out, err)
                raise SbxError(res.code, "sbx-ns --join --connect handed back no socket (it exited %d): %s"
                               % (res.code, err.decode(errors="replace").strip()))
            s = socket.socket(fileno=fd)
            fd = -1
            return s
        finally:
            if fd >= 0:
                os.close(fd)
            mine.close()
            theirs.close()

    # -- the inside of a call --------------------------------------------

    def _join(self, words, stdin=None, timeout=None, stdout=None, handback=None,
              on_timeout=None):
        """One sbx-ns --join PATH --status-fd N WORDS..., waited for and
        reaped: (exit line, stdout, stderr, fds handed back).

        The command's stdin, stdout and stderr are unlinked files, not
        pipes: the call ends when the command does, even if a process it
        left running holds them, and that process never meets a closed
        pipe (SIGPIPE). What it writes after the end is not collected."""
        lost = self._dead()
        if lost is not None:
            raise lost
        if not self._ready:
            raise SbxError(EXIT_USAGE, "the sandbox is not ready: call start() (or launch() and wait_ready())")
        self._trim_status()
        proc = None
        fds = []
        files = []
        r = w = -1
        try:
            for _ in range(3 if stdout is None else 2):
                files.append(tempfile.TemporaryFile(buffering=0))
            fin, ferr = files[0], files[1]
            fout = files[2] if stdout is None else stdout
            if stdin is not None:
                fin.write(stdin)
                fin.seek(0)
            r, w = os.pipe()
            r, w = _high(r), _high(w)
            argv = [self.sbx_ns, "--join", self.path, "--status-fd", str(w)] + words
            proc = _spawn(argv, stdin=subprocess.DEVNULL if stdin is None else fin,
                          stdout=fout, stderr=ferr, pass_fds=(w,))
            os.close(w)
            w = -1
            if handback is not None:
                # The host program sends the socket, then exits.
                stdout.close()
                try:
                    _, got, _, _ = socket.recv_fds(handback, 1, 1)
                    fds.extend(got)
                except socket.timeout:
                    pass
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                # The client goes, and its command with it (sbx kills a
                # command whose client is gone); the job of --wait-job runs on.
                _reap(proc)
                if on_timeout is not None:
                    raise on_timeout from None
                raise SbxError(None, "sbx-ns --join %s %s did not end within %gs; the client killed it"
                               % (self.path, words[0], timeout)) from None
            ev = _exit_line(_read_nonblocking(r))
            out = b"" if stdout is not None else os.pread(fout.fileno(), os.fstat(fout.fileno()).st_size, 0)
            err = os.pread(ferr.fileno(), os.fstat(ferr.fileno()).st_size, 0)
        except BaseException:
            for fd in fds:
                os.close(fd)
            raise
        finally:
            if proc is not None:
                _reap(proc)
            for f in files:
                f.close()
            for fd in (r, w):
                if fd >= 0:
                    os.close(fd)
        if ev is None and not fds:
            code = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
            raise SbxError(code, "sbx-ns --join wrote no exit line (it exited %d): %s"
                           % (code, err.decode(errors="replace").strip()))
        return ev, out, err, fds

    def _outcome(self, ev, out, err):
        """What sbx-ns --join's exit line says: sbx's refusal or failure
        (error), what sbx killed (killed), or the command's own end."""
        code = ev.get("code")
        if ev.get("error") is not None:
            if code == EXIT_LOST:
                raise SandboxLost(code, ev["error"], self._log_tail())
            raise SbxError(code, ev["error"])
        res = Result(code, out, err, ev.get("signal", 0))
        if ev.get("killed") is not None:
            raise CommandKilled(code, ev["killed"], res)
        return res

    def _dead(self):
        """None while the server runs; else the SandboxLost that says how
        it ended (sbx's code for a sandbox that is gone, and its words)."""
        if self._proc is None or self._proc.poll() is None:
            return None
        _, why = self._server_end()
        if not why and self._proc.returncode == 0:
            why = ("it was stopped: by sbx-ns --join --stop, or by a signal such as the SIGTERM that "
                   "the end of the thread that started it sends")
        msg = "sbx-ns --serve %s (pid %d) %s: the sandbox is gone" % (self.path, self._proc.pid, self._how())
        if why:
            msg += " (%s)" % why
        return SandboxLost(EXIT_LOST, msg, self._log_tail())

    def _how(self):
        rc = self._proc.returncode
        return "was killed by %s" % _signame(-rc) if rc < 0 else "exited %d" % rc

    def _server_end(self):
        """The server's code and sbx's reason, from its exit line (its
        stage when it gives no reason); its exit status and no reason
        when it wrote no line (killed)."""
        rc = self._proc.returncode
        ev = None
        with self._lock:
            if self._status_fd >= 0:
                size = os.fstat(self._status_fd).st_size
                ev = _exit_line(os.pread(self._status_fd, _STATUS_TAIL, max(0, size - _STATUS_TAIL)))
        if ev is not None:
            why = ev.get("error") or ""
            if not why and ev.get("stage") == "init":
                why = "the first program (%s) exited %s" % (" ".join(self.init or ()), ev.get("code"))
            elif not why and ev.get("stage"):
                why = "it ended with %s at its %s stage" % (ev.get("code"), ev["stage"])
            return ev.get("code"), why
        if rc is None or rc >= 0:
            return rc, ""
        return 128 - rc, ""

    def _run_opts(self, timeout, cwd, env):
        opts = []
        if timeout is not None:
            opts += ["--timeout", _seconds(timeout, "timeout")]
        if cwd is not None:
            opts += ["--cwd", os.fspath(cwd)]
        for k, v in (env or {}).items():
            opts += ["--setenv", "%s=%s" % (k, v)]
        return opts

    @staticmethod
    def _argv(argv):
        if isinstance(argv, (str, bytes)):
            raise TypeError("argv must be a list of words, not one string")
        argv = [os.fspath(a) for a in argv]
        if not argv:
            raise SbxError(EXIT_USAGE, "missing program")
        return argv

    # -- what the client holds -------------------------------------------

    @staticmethod
    def _tmpfile():
        """An unlinked file of the client's, appended to by sbx-ns."""
        f = tempfile.TemporaryFile()
        try:
            fd = _high(os.dup(f.fileno()))
        finally:
            f.close()
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)
        return fd

    def _trim_status(self):
        """Empty the status file past _STATUS_MAX, unless it ends with the
        server's exit line (the reason a lost sandbox is told by)."""
        with self._lock:
            fd = self._status_fd
            if fd < 0:
                return
            size = os.fstat(fd).st_size
            if size > _STATUS_MAX and b'"event":"exit"' not in os.pread(fd, _STATUS_TAIL, size - _STATUS_TAIL):
                os.ftruncate(fd, 0)

    def _log_tail(self):
        with self._lock:
            fd = self._log_fd
            if fd < 0:
                return ""
            size = os.fstat(fd).st_size
            data = os.pread(fd, _TAIL, max(0, size - _TAIL))
        return data.decode(errors="replace").strip()

    def _terminate(self):
        """End the server: SIGTERM (it stops the sandbox and cleans up),
        then SIGKILL; reaped either way."""
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(_ANSWER)
            except subprocess.TimeoutExpired:
                pass
        _reap(self._proc)

    def _abandon(self):
        """The server ended or is ended now; then everything released."""
        if self._proc is not None:
            self._terminate()
            self._ready = False
        self._release()

    def _release(self):
        with self._lock:
            self._release_locked()

    def _release_locked(self):
        # A killed server leaves its socket. It is removed if it is still
        # the one the server made (same device and inode), or if it lies
        # in the client's own private directory (nothing else is there).
        gone = self._proc is not None and self._proc.returncode is not None
        if gone and (self._sock_id is not None or self._dir is not None):
            try:
                st = os.lstat(self.path)
                if stat.S_ISSOCK(st.st_mode) and (self._dir is not None or
                                                  (st.st_dev, st.st_ino) == self._sock_id):
                    os.unlink(self.path)
            except FileNotFoundError:
                pass
            self._sock_id = None
        for name in ("_ready_fd", "_status_fd", "_log_fd"):
            fd = getattr(self, name)
            if fd >= 0:
                os.close(fd)
                setattr(self, name, -1)
        if self._dir is not None and (gone or self._proc is None):
            try:
                os.rmdir(self._dir)
            except FileNotFoundError:
                pass
            self._dir = None
