#!/usr/bin/env python3
"""broker-ph.py: the two ends of a request that carries a route's
placeholder past its head (tests/49-broker-service-tls.bats).

  record ADDR PORT PREFIX   an origin that keeps every byte of each request
                            in PREFIX.N; says "ready", then "head" when a
                            request head is in and "done N BYTES" when the
                            connection is over (a whole request is answered
                            200, one the broker ends is not)
  post SOCK URL PART1 PART2 EVENTS
                            a POST through the broker's socket SOCK with the
                            body PART1 PART2 (Content-Length); PART2 is
                            written only after EVENTS (the recorder's lines)
                            said "head"; "@N..." is N bytes of x, then ...; prints the
                            answer's status line and Sbx-Broker-Reason
  hello SOCK HOST SNI ALPN  CONNECT HOST:443, then a ClientHello naming SNI
                            and offering ALPN; prints how the handshake ended
  req SOCK METHOD TARGET BODY FIELD...
                            one request through SOCK, its FIELDs written as
                            given (raw bytes, each line ended with CRLF) and
                            BODY after them (with its Content-Length when it
                            is not empty); prints the answer's status line,
                            Sbx-Broker-Reason, Location and
                            Access-Control-Allow-Origin, then a 200's body
"""
import os
import re
import select
import socket
import ssl
import sys


def record(addr, port, prefix):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, int(port)))
    s.listen(8)
    print("ready", flush=True)
    n = 0
    while True:
        c, _ = s.accept()
        n += 1
        got, want = b"", None
        while want is None or len(got) < want:
            b = c.recv(65536)
            if not b:
                break
            got += b
            if want is None and b"\r\n\r\n" in got:
                head = got.partition(b"\r\n\r\n")[0]
                m = re.search(rb"(?im)^content-length: *(\d+)", head)
                want = len(head) + 4 + int(m.group(1) if m else 0)
                print("head", flush=True)
        if want is not None and len(got) >= want:
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n")
        c.close()
        with open("%s.%d" % (prefix, n), "wb") as f:
            f.write(got)
        print("done %d %d" % (n, len(got)), flush=True)


def part(p):
    m = re.fullmatch(r"@(\d+)(.*)", p)
    return b"x" * int(m.group(1)) + m.group(2).encode() if m else p.encode()


def answer(c, show=(b"HTTP/", b"Sbx-Broker-Reason:")):
    got = b""
    while True:
        try:
            b = c.recv(65536)
        except ConnectionResetError:
            break
        if not b:
            break
        got += b
    head, _, body = got.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.startswith(show):
            print(line.decode())
    if not got:
        print("closed")
    return head, body


def post(sock, url, p1, p2, events):
    host = url.split("/")[2]
    b1, b2 = part(p1), part(p2)
    c = socket.socket(socket.AF_UNIX)
    c.connect(sock)
    c.sendall(b"POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n" % (url.encode(), host.encode(),
                                                                          len(b1) + len(b2)) + b1)
    if b2:
        fd, ev = os.open(events, os.O_RDONLY | os.O_NONBLOCK), b""
        while len(ev) < 5 and select.select([fd], [], [], 60)[0]:
            b = os.read(fd, 5 - len(ev))
            if not b:
                break
            ev += b
        if ev != b"head\n":
            print("the origin never got the head: %r" % ev)
        os.close(fd)
        try:
            c.sendall(b2)
        except (BrokenPipeError, ConnectionResetError):
            pass
    answer(c)


def hello(sock, host, sni, alpn):
    c = socket.socket(socket.AF_UNIX)
    c.connect(sock)
    c.sendall(b"CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n\r\n" % (host.encode(), host.encode()))
    head = b""
    while b"\r\n\r\n" not in head:
        b = c.recv(1)
        if not b:
            break
        head += b
    print(head.split(b"\r\n")[0].decode())
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols([alpn])
    try:
        ctx.wrap_socket(c, server_hostname=sni).close()
        print("handshake done")
    except ssl.SSLError as e:
        print(e.reason)


def req(sock, method, target, body, *fields):
    c = socket.socket(socket.AF_UNIX)
    c.connect(sock)
    b = body.encode()
    head = b"%s %s HTTP/1.1\r\n" % (method.encode(), target.encode())
    for f in fields:
        head += f.encode("utf-8", "surrogateescape") + b"\r\n"
    if b:
        head += b"Content-Length: %d\r\n" % len(b)
    c.sendall(head + b"\r\n" + b)
    head, body = answer(c, (b"HTTP/", b"Sbx-Broker-Reason:", b"Location:", b"Access-Control-Allow-Origin:"))
    if not head.startswith(b"HTTP/1.1 200 "):
        return
    if re.search(rb"(?im)^transfer-encoding: *chunked", head):
        whole = b""
        while True:
            size, _, body = body.partition(b"\r\n")
            n = int(size.split(b";")[0], 16)
            if not n:
                break
            whole, body = whole + body[:n], body[n + 2:]
        body = whole
    sys.stdout.write(body.decode())


if __name__ == "__main__":
    {"record": record, "post": post, "hello": hello, "req": req}[sys.argv[1]](*sys.argv[2:])
