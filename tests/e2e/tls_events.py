#!/usr/bin/env python3
"""TLS decoder events (app-layer-event:tls.*) on connections built here (scapy), one case each.

The expected events come from Suricata 8's record layer, read in app-layer-ssl.c: SSLv3Decode's
header checks (a record type outside 20..24: invalid_record_type; a length of 0 or over
2^14 + 1024: invalid_record_length; a handshake record under 4 bytes: invalid_ssl_record),
SSLv3ParseHandshakeProtocol (a message header that does not fit in what is left of its record:
invalid_ssl_record and invalid_handshake_message; an unknown message type before the sender's
ChangeCipherSpec: invalid_handshake_message; a message split over two records: nothing),
SSLv3ParseAlertProtocol (an alert record under 2 bytes: invalid_alert_message) and
SSLv3ParseHeartbeatProtocol (a clear heartbeat whose payload length runs past its record:
overflow_heartbeat_message, CVE-2014-0160; one with under 16 bytes of padding or an unknown type:
invalid_heartbeat_message; after ChangeCipherSpec, a response record longer than its request's:
dataleak_heartbeat_mismatch). Every connection starts with a well-formed TLS 1.2 ClientHello and
ServerHello; the "clean" ones (a valid clear heartbeat and its answer, an encrypted one answered
with a record of its request's length, application data) must raise nothing. The ClientHello's
server_name as TLSDecodeHSHelloExtensionSni reads it: a first entry that is not a host_name
(invalid_sni_type), a name of 0 or over 255 bytes or past its extension (invalid_sni_length), a
second server_name extension (multiple_sni_extensions). Each case's rule alerts on its connection
only: once, or once each way for the hello's events (the rules have no direction).

usage: tls_events.py GASPP [--backend cpu|cuda]
"""
import os
import sys

from acked_sessions import acked_session, alerts_by_port

try:
    import scapy.all  # noqa: F401 (the builders use it)
except ImportError:
    print("scapy is not installed (scripts/setup.sh installs it); skipping")
    sys.exit(1 if os.environ.get("CI") else 77)

C, S = "10.9.0.1", "10.9.0.2"
EVENTS = ["invalid_record_type", "invalid_record_length", "invalid_ssl_record", "invalid_alert_message",
          "overflow_heartbeat_message", "invalid_heartbeat_message", "dataleak_heartbeat_mismatch",
          "invalid_handshake_message", "invalid_sni_type", "invalid_sni_length", "multiple_sni_extensions",
          "handshake_invalid_length"]


def record(t, body, version=b"\x03\x03"):
    return bytes([t]) + version + len(body).to_bytes(2, "big") + body


def handshake(t, body):
    return bytes([t]) + len(body).to_bytes(3, "big") + body


CLIENT_HELLO = record(22, handshake(1, b"\x03\x03" + b"r" * 32 + b"\x00" + b"\x00\x02\xc0\x2f" + b"\x01\x00" + b"\x00\x00"))
SERVER_HELLO = record(22, handshake(2, b"\x03\x03" + b"s" * 32 + b"\x00" + b"\xc0\x2f" + b"\x00" + b"\x00\x00")
                      + handshake(14, b""))
CCS = record(20, b"\x01")


def client_hello(exts):
    """A TLS 1.2 ClientHello with these extensions (bytes as sent)."""
    body = b"\x03\x03" + b"r" * 32 + b"\x00" + b"\x00\x02\xc0\x2f" + b"\x01\x00" + len(exts).to_bytes(2, "big") + exts
    return record(22, handshake(1, body))


def sni(name, kind=0, name_len=None):
    """A server_name extension of one entry (its length field name_len when given)."""
    entry = bytes([kind]) + (len(name) if name_len is None else name_len).to_bytes(2, "big") + name
    data = len(entry).to_bytes(2, "big") + entry
    return b"\x00\x00" + len(data).to_bytes(2, "big") + data


# Suricata's TLSDecodeHSHelloExtensionSni: the first entry must be a host_name of 1 to 255 bytes
# that fits its extension; a second server_name extension is an event.
SNI_HELLOS = {
    "sni of another type": client_hello(sni(b"example.com", kind=1)),
    "sni of length 0": client_hello(sni(b"")),
    "sni past its extension": client_hello(sni(b"short", name_len=50)),
    "sni of 256 bytes": client_hello(sni(b"a" * 256)),
    "two server_name extensions": client_hello(sni(b"a.example") + sni(b"b.example")),
    "a good sni": client_hello(sni(b"a.example") + b"\x00\x17\x00\x00"),
    # Too short for its list length and type: handshake_invalid_length, the hello kept.
    "sni too short for its header": client_hello(b"\x00\x00\x00\x02\x00\x00"),
}
CKE = handshake(16, b"k" * 10)  # a ClientKeyExchange


def heartbeat(hb_type, payload_len, payload, padding):
    return record(24, bytes([hb_type]) + payload_len.to_bytes(2, "big") + payload + padding)


# (name, [(sender, bytes)] after the hellos, the events it raises)
CASES = [
    ("record type", [("s", record(0x30, b"xxxx"))], "invalid_record_type"),
    ("record length 0", [("c", record(23, b""))], "invalid_record_length"),
    ("record too long", [("s", b"\x17\x03\x03\x44\x01" + b"x" * 100)], "invalid_record_length"),
    ("short handshake", [("c", record(22, b"\x10\x00"))], "invalid_ssl_record"),
    ("short alert", [("s", record(21, b"\x02"))], "invalid_alert_message"),
    ("heartbleed", [("c", heartbeat(1, 0x4000, b"", b""))], "overflow_heartbeat_message"),
    ("short padding", [("c", heartbeat(1, 4, b"ping", b"p" * 8))], "invalid_heartbeat_message"),
    ("unknown heartbeat type", [("c", heartbeat(7, 4, b"ping", b"p" * 16))], "invalid_heartbeat_message"),
    ("two in flight", [("c", heartbeat(1, 4, b"ping", b"p" * 16)), ("c", heartbeat(1, 4, b"ping", b"p" * 16))],
     "invalid_heartbeat_message"),
    ("encrypted leak", [("c", CCS), ("s", CCS), ("c", record(24, b"e" * 40)), ("s", record(24, b"E" * 16384))],
     "dataleak_heartbeat_mismatch"),
    ("clean heartbeat", [("c", heartbeat(1, 4, b"ping", b"p" * 16)), ("s", heartbeat(2, 4, b"ping", b"q" * 16))], ()),
    ("clean encrypted", [("c", CCS), ("s", CCS), ("c", record(24, b"e" * 40)), ("s", record(24, b"E" * 40)),
                         ("c", record(23, b"a" * 300)), ("s", record(23, b"b" * 3000))], ()),
    ("tls 1.0 tolerates a bad type", [("s", record(0x30, b"xxxx", b"\x03\x01"))], "invalid_record_type"),
    ("unknown handshake type", [("c", record(22, handshake(99, b"abc"))), ("c", CCS)], "invalid_handshake_message"),
    ("message header past its record", [("c", record(22, CKE + b"\x10\x00"))],
     ("invalid_ssl_record", "invalid_handshake_message")),
    ("message across records", [("c", record(22, CKE[:8])), ("c", record(22, CKE[8:])), ("c", CCS)], ()),
    # Raised by the ClientHello, then still on the transaction when the ServerHello comes: a rule
    # without a direction matches once each way (as the others would, had the other side spoken
    # after them).
    ("sni of another type", [], ("invalid_sni_type",) * 2),
    ("sni of length 0", [], ("invalid_sni_length",) * 2),
    ("sni past its extension", [], ("invalid_sni_length",) * 2),
    ("sni of 256 bytes", [], ("invalid_sni_length",) * 2),
    ("two server_name extensions", [], ("multiple_sni_extensions",) * 2),
    ("a good sni", [], ()),
    ("sni too short for its header", [], ("handshake_invalid_length",) * 2),
]


def connection(port, steps, pk):
    """Handshake, the hellos, then the case's records, each its own segment, acknowledged."""
    acked_session(pk, port, 443, [("c", CLIENT_HELLO), ("s", SERVER_HELLO)] + steps, C, S)


def main():
    gaspp = sys.argv[1]
    backend = sys.argv[sys.argv.index("--backend") + 1] if "--backend" in sys.argv else "cpu"
    # The TLS 1.0 case: hellos of that version (the record walk keeps the hello's version).
    pk, want = [], {}
    for k, (name, steps, ev) in enumerate(CASES):
        port = 40000 + k
        if name.startswith("tls 1.0"):
            global CLIENT_HELLO, SERVER_HELLO
            saved = CLIENT_HELLO, SERVER_HELLO
            CLIENT_HELLO = CLIENT_HELLO.replace(b"\x03\x03" + b"r" * 32, b"\x03\x01" + b"r" * 32)
            SERVER_HELLO = SERVER_HELLO.replace(b"\x03\x03" + b"s" * 32, b"\x03\x01" + b"s" * 32)
            connection(port, steps, pk)
            CLIENT_HELLO, SERVER_HELLO = saved
        elif name in SNI_HELLOS:
            saved = CLIENT_HELLO
            CLIENT_HELLO = SNI_HELLOS[name]
            connection(port, steps, pk)
            CLIENT_HELLO = saved
        else:
            connection(port, steps, pk)
        for e in (ev,) if isinstance(ev, str) else ev or ():
            want.setdefault(EVENTS.index(e) + 1, []).append(port)
    fails = []
    rules = [f'alert tls any any -> any any (msg:"{ev}"; app-layer-event:tls.{ev}; sid:{sid};)'
             for sid, ev in enumerate(EVENTS, start=1)]
    got = alerts_by_port(gaspp, backend, pk, rules, 443)
    if got is None:
        return 1
    for sid in sorted(set(want) | set(got)):
        if sorted(got.get(sid, [])) != sorted(want.get(sid, [])):
            fails.append(f"{EVENTS[sid - 1]} (sid {sid}): alerts on ports {sorted(got.get(sid, []))}, "
                         f"expected {sorted(want.get(sid, []))}")
    for f in fails:
        print("FAIL", f)
    print(f"{len(CASES)} connections, {len(EVENTS)} event rules, {len(fails)} problems")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
