/* The first thing a client sends inside a CONNECT tunnel must be a TLS
 * ClientHello naming, in its server_name extension, the host that CONNECT
 * named. This parser reads only that: it reassembles the handshake message
 * from as many records as the client split it into, and it never decrypts,
 * answers or alters anything. */
#ifndef SBX_TLSHELLO_H
#define SBX_TLSHELLO_H

#include <stddef.h>

#define SBX_TLS_HELLO_MAX 65536 /* most handshake bytes buffered */

enum {
	SBX_TLS_INCOMPLETE = 0,
	SBX_TLS_DONE = 1,
	SBX_TLS_BAD = -1,
};

/* TLS alert descriptions the broker sends (in a plaintext alert record)
 * when it refuses a hello. */
#define SBX_TLS_ALERT_DECODE 50
#define SBX_TLS_ALERT_ACCESS 49
#define SBX_TLS_ALERT_NAME 112

struct sbx_tls_hello {
	char sni[254];     /* the one host_name, normal form */
	size_t used;       /* bytes of the buffer up to the end of the record
			    * holding the end of the ClientHello */
	const char *why;   /* on SBX_TLS_BAD */
	int alert;         /* on SBX_TLS_BAD: alert description to send */
};

/* Parse the bytes a client sent so far. Refuses: a first byte that is not a
 * handshake record (this includes SSLv2-compatible hellos), any other
 * record type before the hello is complete, a handshake message other than
 * ClientHello, malformed lengths, a duplicate extension, encrypted client
 * hello (0xfe0d) or ESNI (0xffce), a missing server_name, one naming
 * anything but exactly one host_name, and a name that is not a valid host
 * name (IP literals included). */
int sbx_tls_hello_parse(const unsigned char *buf, size_t len, struct sbx_tls_hello *h);

#endif
