# A DNS server over UDP for the broker's resolver tests and bench
# (tests/42-broker-fair.bats, tests/44-broker-address.bats,
# bench/sbx-broker-fair.sh):
#
#   slow-dns.py ADDR ANSWER LOG READY [DELAY_MS]
#
# listens on ADDR:53, appends "QUERY NAME TYPE" to LOG for every query, and
# answers A with the IPv4 addresses of ANSWER (one address, or several
# separated by commas), AAAA with its IPv6 ones, anything else with no
# record (NOERROR). A name under v4.test gets no AAAA record, one under
# v6.test no A record. A name under rebind.test gets its answer the first
# time each type is asked, then 127.0.0.1 or ::1: the DNS rebinding of
# whoever controls a name. A name
# under held.test is answered only once the file LOG.release exists (a
# test decides when, no clock involved); a name under slow.test after
# DELAY_MS milliseconds; any other name at once. READY is written when the
# socket is bound.
import os, select, socket, struct, sys, time

addr, answer, log, ready = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
delay = int(sys.argv[5]) / 1000.0 if len(sys.argv) > 5 else 0.0
release = log + ".release"
a4 = [socket.inet_pton(socket.AF_INET, a) for a in answer.split(",") if ":" not in a]
a6 = [socket.inet_pton(socket.AF_INET6, a) for a in answer.split(",") if ":" in a]
asked = set()

def qname(msg):
    labels, i = [], 12
    while msg[i]:
        n = msg[i]
        labels.append(msg[i + 1:i + 1 + n].decode("ascii", "replace"))
        i += 1 + n
    qtype = struct.unpack(">H", msg[i + 1:i + 3])[0]
    return ".".join(labels).lower(), qtype, i + 5

def reply(msg):
    name, qtype, end = qname(msg)
    flags = 0x8180 | (msg[2] & 0x01) << 8
    addrs = []
    if qtype == 1 and not name.endswith(".v6.test"):
        addrs = a4
    elif qtype == 28 and not name.endswith(".v4.test"):
        addrs = a6
    if addrs and name.endswith(".rebind.test"):
        if (name, qtype) in asked:
            addrs = [socket.inet_pton(socket.AF_INET, "127.0.0.1") if qtype == 1 else
                     socket.inet_pton(socket.AF_INET6, "::1")]
        asked.add((name, qtype))
    an = b"".join(b"\xc0\x0c" + struct.pack(">HHIH", qtype, 1, 5, len(a)) + a for a in addrs)
    head = msg[:2] + struct.pack(">HHHHH", flags, 1, len(addrs), 0, 0)
    return name, qtype, head + msg[12:end] + an

s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((addr, 53))
with open(ready, "w") as f:
    f.write("ready\n")
waiting = []  # (due or None for held, reply, peer)
while True:
    now = time.monotonic()
    released = os.path.exists(release)
    keep = []
    for due, r, peer in waiting:
        if (due is None and released) or (due is not None and due <= now):
            s.sendto(r, peer)
        else:
            keep.append((due, r, peer))
    waiting = keep
    r, _, _ = select.select([s], [], [], 0.01 if waiting else 0.2)
    if not r:
        continue
    msg, peer = s.recvfrom(512)
    try:
        name, qtype, ans = reply(msg)
    except (IndexError, struct.error):
        continue
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, ("QUERY %s %d\n" % (name, qtype)).encode())
    os.close(fd)
    if name.endswith(".held.test"):
        waiting.append((None, ans, peer))
    elif name.endswith(".slow.test"):
        waiting.append((time.monotonic() + delay, ans, peer))
    else:
        s.sendto(ans, peer)
