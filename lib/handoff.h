/* The words sbx-ns and sbx-broker exchange on the broker's socket, in one
 * place (both sides build and read them from here).
 *
 *   SBX_PROBE           sbx-ns checks that the broker answers; closed
 *                       without a word and without a log line.
 *   SBX_PROBE_PORTS     the same, in transparent mode: the broker answers
 *                       SBX_PORTS followed by " N" for every port whose
 *                       connections the sandbox must capture, then "\n".
 *   SBX_PROBE_TCP       the landlock tier's: the broker answers SBX_TCP
 *                       followed by " INODE" for each of its --listen-tcp
 *                       listening sockets, then "\n", and closes (on its
 *                       Unix socket this comes through the reserve, never
 *                       against a uid's --listen-tcp cap).
 *   SBX_HANDOFF_HELLO   with the two proxy listeners (127.0.0.1, ::1).
 *   SBX_HANDOFF_TRANSPARENT  with, in this order, the two proxy listeners,
 *                       the DNS socket (UDP, 127.0.0.1:53), the DNS
 *                       listener (TCP, 127.0.0.1:53) and one wildcard
 *                       listener per port of SBX_PORTS, in its order.
 *   SBX_HANDOFF_OK, SBX_HANDOFF_REFUSED "why\n"  the broker's answer.
 *
 * In transparent mode every name the broker allows resolves, inside the
 * sandbox, to an address of SBX_SYNTH_NET (240.0.0.0/4, reserved: never
 * a destination on any network, and an address the broker itself never
 * dials), routed to the sandbox's own lo. */
#ifndef SBX_HANDOFF_H
#define SBX_HANDOFF_H

#define SBX_PROBE "SBX-PROBE 1\n"
#define SBX_PROBE_PORTS "SBX-PROBE 2\n"
#define SBX_PROBE_TCP "SBX-PROBE 3\n"
#define SBX_PORTS "SBX-PORTS"
#define SBX_TCP "SBX-TCP"
#define SBX_HANDOFF_HELLO "SBX-HANDOFF 1\n"
#define SBX_HANDOFF_TRANSPARENT "SBX-HANDOFF 1 TRANSPARENT\n"
#define SBX_HANDOFF_OK "SBX-HANDOFF OK\n"
#define SBX_HANDOFF_REFUSED "SBX-HANDOFF REFUSED "

#define SBX_CAPTURE_MAX 80         /* ports captured: --allow-port's 64 and --allow-tcp's 16 */
#define SBX_HANDOFF_FDS (4 + SBX_CAPTURE_MAX)
#define SBX_DNS_PORT 53
#define SBX_SYNTH_NET 0xf0000000u  /* 240.0.0.0 */
#define SBX_SYNTH_PREFIX 4

#endif
