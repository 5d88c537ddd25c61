#!/usr/bin/env python3
"""serve-raw.py SOCK CASE: one hand-made client of a living sandbox
(sbx-ns --serve), speaking its protocol wrongly on purpose; prints the
answer the sandbox gave (or what happened to the connection).

Cases:
  verb        an unknown verb
  unterminated  words without the final NUL
  field       run with an unknown field
  nodash      run without "--" and a program
  fds2        run with two fds instead of three
  fds5        run with five fds (more than a request may carry)
  words       a request of 100,000 words
  argv        run with 4,097 arguments
  env         run with 4,097 variables
  tty         run with a terminal (a new pty) as its stdin
  signal      "signal 9" from a client that runs nothing
  empty       an empty message (read as the end of the connection)
  hold N      N connections that say nothing, one more that asks to run
              true; then one of the N goes, and the last one's answer
  killstart   run "sleep 1000" and close before the answer
"""
import os
import pty
import socket
import sys


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(path)
    return s


def answer(s):
    try:
        data = s.recv(65536)
    except ConnectionResetError:
        return "reset"
    return data.decode(errors="replace") if data else "closed"


def words(*w):
    return b"".join(x.encode() + b"\0" for x in w)


def main():
    path, case = sys.argv[1], sys.argv[2]
    s = connect(path)
    stdio = [0, 1, 2]
    if case == "verb":
        s.send(words("bogus"))
    elif case == "unterminated":
        s.send(b"run\0--\0true")
    elif case == "field":
        s.send(words("run", "x=1", "--", "true"))
    elif case == "nodash":
        s.send(words("run", "cwd=/"))
    elif case == "fds2":
        socket.send_fds(s, [words("run", "--", "true")], stdio[:2])
    elif case == "fds5":
        socket.send_fds(s, [words("run", "--", "true")], stdio + [0, 1])
    elif case == "words":
        s.send(b"a\0" * 100000)
    elif case == "argv":
        socket.send_fds(s, [words("run", "--", *(["true"] * 4097))], stdio)
    elif case == "env":
        env = ["env=V%d=x" % i for i in range(4097)]
        socket.send_fds(s, [words("run", *env, "--", "true")], stdio)
    elif case == "tty":
        master, slave = pty.openpty()
        socket.send_fds(s, [words("run", "--", "true")], [slave, 1, 2])
    elif case == "signal":
        s.send(b"signal 9")
    elif case == "empty":
        s.send(b"")
    elif case == "hold":
        s.close()
        held = [connect(path) for _ in range(int(sys.argv[3]))]
        last = connect(path)
        socket.send_fds(last, [words("run", "--", "true")], stdio)
        held[0].close()
        print(answer(last))
        for h in held[1:]:
            h.close()
        return
    elif case == "killstart":
        socket.send_fds(s, [words("run", "--", "sleep", "1000")], stdio)
        s.close()
        return
    else:
        print("serve-raw.py: unknown case " + case, file=sys.stderr)
        sys.exit(2)
    print(answer(s))


main()
