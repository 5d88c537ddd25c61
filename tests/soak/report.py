#!/usr/bin/env python3
"""The soak's figures: reads the "# SOAK" lines tests/soak/soak.bash wrote to
the VM's TAP stream (tests/vm/run.sh keeps it as results.log) and writes
OUT/report.md, OUT/probe.dat and OUT/sample.dat; with --plot, gnuplot draws
OUT/latency.svg from them. Prints the soak's closing line and exits 0 only
when it says 0 lost, 0 leaked.

    report.py [--plot] [--load BEFORE AFTER] RESULTS_LOG OUT
"""
import argparse
import collections
import os
import re
import subprocess
import sys


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))] if xs else None


def ms(v):
    return "-" if v is None else f"{v} ms"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plot", action="store_true")
    ap.add_argument("--load", nargs=2, default=["?", "?"])
    ap.add_argument("results")
    ap.add_argument("out")
    a = ap.parse_args()
    start, idle, probe, samples, calls, faults, lost, leaks, endsb = {}, [], [], [], [], [], [], [], []
    endbroker, brokerlog, final, started, changes = None, None, None, None, collections.Counter()
    stopping = None
    try:
        f = open(a.results, errors="replace")
    except FileNotFoundError:
        print("soak: did not finish (no closing line in the VM's results)")
        return 1
    with f:
        for line in f:
            line = line.rstrip("\r\n")
            if re.fullmatch(r"soak: \d+ calls, \d+ faults, \d+ lost, \d+ leaked", line):
                final = line
                continue
            if not line.startswith("# SOAK "):
                continue
            w = line[7:].split(" ")
            k, v = w[0], w[1:]
            if k == "start":
                start = dict(x.split("=", 1) for x in v)
            elif k == "stopping":
                stopping = int(v[0])
            elif k == "started":
                started = (int(v[1]), int(v[4]))
            elif k == "idle":
                idle.append(int(v[0]))
            elif k == "probe":
                probe.append((int(v[0]), int(v[1])))
            elif k == "sample":
                # sample T broker RSS FDS servers RSS FDS pid1s RSS FDS
                samples.append([int(v[0])] + [int(v[i]) for i in (2, 3, 5, 6, 8, 9)])
            elif k == "call":
                calls.append((int(v[0]), int(v[1]), v[2], v[3]))
            elif k == "fault":
                faults.append((int(v[0]), v[1], int(v[2]), " ".join(v[3:])))
            elif k == "lost":
                lost.append(" ".join(v[1:]))
            elif k == "leak":
                leaks.append(" ".join(v[1:]))
            elif k == "end-sb":
                endsb.append([int(x) for x in v])
            elif k == "end-broker":
                endbroker = [int(x) for x in v]
            elif k == "broker-log":
                brokerlog = " ".join(v)
            elif k == "changes":
                changes[v[1]] += 1
    os.makedirs(a.out, exist_ok=True)
    # The load lasts until the harness stops it: past SOAK_SECONDS while
    # the last fault kinds of the first round run.
    secs = (stopping // 1000 if stopping else int(start.get("seconds", 0))) or 1
    r = []
    r.append("# sbx soak\n")
    if not start:
        r.append("The soak did not start: no figures (see vm.log and vm/console.log).\n")
    r.append(f"Seed {start.get('seed')}, {start.get('seconds')} s of load asked, {secs} s run, {start.get('sandboxes')} living sandboxes, "
             f"{start.get('workers')} workers; VM: Linux {start.get('kernel')} under QEMU/TCG, {start.get('cpus')} vCPUs, "
             f"{int(start.get('mem_kb', 0)) // 1024} MiB. Host load average (1, 5, 15 min) {' '.join(a.load[:1])} before, "
             f"{a.load[1]} after.\n")
    if started:
        r.append(f"Starting the {started[0]} sandboxes took {started[1]} ms.\n")
    r.append("## Calls\n")
    r.append("| kind | calls | ok | ended by a fault, as documented | lost | p50 | p99 | max |")
    r.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    bykind = collections.defaultdict(list)
    for c in calls:
        bykind[c[2]].append(c)
    for kind in sorted(bykind):
        cs = bykind[kind]
        d = [c[1] for c in cs]
        ok = sum(c[3] == "ok" for c in cs)
        lo = sum(c[3] == "lost" for c in cs)
        r.append(f"| {kind} | {len(cs)} | {ok} | {len(cs) - ok - lo} | {lo} | {pct(d, .5)} ms | {pct(d, .99)} ms | {max(d)} ms |")
    why = collections.Counter(c[3] for c in calls if c[3] not in ("ok", "lost"))
    r.append(f"\n{len(calls)} calls, {len(calls) / secs:.1f} per second. Ended by a fault: "
             + (", ".join(f"{k} {n}" for k, n in sorted(why.items())) or "none") + ".\n")
    r.append("## Latency of a joined `true`\n")
    r.append("| | samples | p50 | p99 | max |")
    r.append("| --- | ---: | ---: | ---: | ---: |")
    pl = [p[1] for p in probe]
    r.append(f"| no load | {len(idle)} | {ms(pct(idle, .5))} | {ms(pct(idle, .99))} | {ms(max(idle) if idle else None)} |")
    r.append(f"| under load and faults | {len(pl)} | {ms(pct(pl, .5))} | {ms(pct(pl, .99))} | {ms(max(pl) if pl else None)} |")
    r.append("")
    r.append("## Faults\n")
    r.append("| kind | injected | recovery p50 | recovery max |")
    r.append("| --- | ---: | ---: | ---: |")
    fk = collections.defaultdict(list)
    for f_ in faults:
        fk[f_[1]].append(f_[2])
    for kind in sorted(fk):
        r.append(f"| {kind} | {len(fk[kind])} | {pct(fk[kind], .5)} ms | {max(fk[kind])} ms |")
    r.append("\nRecovery: from the fault to the invariants checked and, for a killed sandbox, a new one"
             " serving on its workspace; for the broker, a new one accepting.\n")
    r.append("## Resources\n")
    r.append("| | at start | at end |")
    r.append("| --- | ---: | ---: |")
    if endbroker:
        r.append(f"| broker RSS (latest start) | {endbroker[0]} KiB | {endbroker[2]} KiB |")
        r.append(f"| broker fds | {endbroker[1]} | {endbroker[3]} |")
    if endsb:
        r.append(f"| servers' RSS, all ({len(endsb)}) | {sum(e[1] for e in endsb)} KiB | {sum(e[5] for e in endsb)} KiB |")
        r.append(f"| servers' fds, all | {sum(e[2] for e in endsb)} | {sum(e[6] for e in endsb)} |")
        r.append(f"| pid 1s' RSS, all | {sum(e[3] for e in endsb)} KiB | {sum(e[7] for e in endsb)} KiB |")
        r.append(f"| pid 1s' fds, all | {sum(e[4] for e in endsb)} | {sum(e[8] for e in endsb)} |")
    r.append("\nAt start: each process when its sandbox (or broker) last started; at end: once no call runs. "
             "Bound: fds within start + 4, RSS within start + 25% + 4 MiB.\n")
    if brokerlog:
        r.append(f"Broker log: {brokerlog}.\n")
    if changes:
        r.append("Change sets at the end: " + ", ".join(f"{k} {n}" for k, n in sorted(changes.items())) + ".\n")
    r.append("## Lost and leaked\n")
    r.extend(f"- lost: {x}" for x in lost)
    r.extend(f"- leaked: {x}" for x in leaks)
    if not lost and not leaks:
        r.append("Nothing.")
    r.append("")
    r.append(final or "The soak did not finish: no closing line.")
    with open(os.path.join(a.out, "report.md"), "w") as f:
        f.write("\n".join(r) + "\n")
    with open(os.path.join(a.out, "probe.dat"), "w") as f:
        f.writelines(f"{t / 1000:.1f} {v}\n" for t, v in probe)
    with open(os.path.join(a.out, "sample.dat"), "w") as f:
        f.writelines(f"{s[0] / 1000:.1f} {s[1] / 1024:.2f} {s[3] / 1024 / max(1, len(endsb) or int(start.get('sandboxes', 1))):.2f}\n"
                     for s in samples)
    if a.plot and probe:
        subprocess.run(["gnuplot", "-e", f"dir='{a.out}'", os.path.join(os.path.dirname(__file__), "latency.gp")],
                       check=True)
    print(final or "soak: did not finish (no closing line in the VM's results)")
    return 0 if final and final.endswith(" 0 lost, 0 leaked") else 1


sys.exit(main())
