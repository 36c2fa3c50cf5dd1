#!/usr/bin/env python3
"""SMTP anomaly rules end to end (app-layer-event:smtp.*), on sessions built here (scapy), with
the directions Suricata's smtp-events.rules give them: the reply events (data_command_rejected,
tls_rejected, no_server_welcome_message) to the client, the command events (duplicate_fields) to
the server. The expected alerts follow Suricata's app-layer-smtp.c: a DATA answered other than
354, a STARTTLS answered other than 220, a command before the server's greeting, a second EHLO.
Each rule alerts once, on its connection only; a clean session raises nothing.

usage: smtp_events.py GASPP [--backend cpu|cuda]
"""
import os
import sys

from acked_sessions import acked_session, alerts_by_port

try:
    import scapy.all  # noqa: F401 (the builders use it)
except ImportError:
    print("scapy is not installed (scripts/setup.sh installs it); skipping")
    sys.exit(1 if os.environ.get("CI") else 77)

C, S = "10.7.0.1", "10.7.0.2"
RULES = [
    (1, "to_client", "data_command_rejected"),
    (2, "to_client", "tls_rejected"),
    (3, "to_client", "no_server_welcome_message"),
    (4, "to_server", "duplicate_fields"),
]
GREET = ("s", b"220 mx ESMTP\r\n")
# (name, [(sender, bytes)], the sids that alert)
SESSIONS = [
    ("clean", [GREET, ("c", b"EHLO a\r\n"), ("s", b"250 ok\r\n"), ("c", b"MAIL FROM:<a@b>\r\n"), ("s", b"250 ok\r\n"),
               ("c", b"DATA\r\n"), ("s", b"354 go\r\n"), ("c", b"Subject: x\r\n\r\nhi\r\n.\r\n"), ("s", b"250 ok\r\n"),
               ("c", b"QUIT\r\n"), ("s", b"221 bye\r\n")], []),
    ("refusals", [GREET, ("c", b"EHLO a\r\n"), ("s", b"250 ok\r\n"), ("c", b"MAIL FROM:<a@b>\r\n"), ("s", b"250 ok\r\n"),
                  ("c", b"DATA\r\n"), ("s", b"554 no\r\n"), ("c", b"STARTTLS\r\n"), ("s", b"454 no tls\r\n"),
                  ("c", b"QUIT\r\n"), ("s", b"221 bye\r\n")], [1, 2]),
    ("no greeting, two EHLOs", [("c", b"EHLO a\r\n"), ("s", b"220 mx\r\n"), ("c", b"EHLO b\r\n"), ("s", b"250 ok\r\n"),
                                ("c", b"QUIT\r\n"), ("s", b"221 bye\r\n")], [3, 4]),
]


def main():
    gaspp = sys.argv[1]
    backend = sys.argv[sys.argv.index("--backend") + 1] if "--backend" in sys.argv else "cpu"
    pk, want = [], {}
    for k, (_, steps, sids) in enumerate(SESSIONS):
        acked_session(pk, 41000 + k, 25, steps, C, S)
        for sid in sids:
            want.setdefault(sid, []).append(41000 + k)
    rules = [f'alert smtp any any -> any any (msg:"{ev}"; flow:established,{direction}; '
             f'app-layer-event:smtp.{ev}; sid:{sid};)' for sid, direction, ev in RULES]
    got = alerts_by_port(gaspp, backend, pk, rules, 25)
    if got is None:
        return 1
    fails = [f"sid {sid} ({ev}): alerts on ports {sorted(got.get(sid, []))}, expected {sorted(want.get(sid, []))}"
             for sid, _, ev in RULES if sorted(got.get(sid, [])) != sorted(want.get(sid, []))]
    for f in fails:
        print("FAIL", f)
    print(f"{len(SESSIONS)} sessions, {len(RULES)} event rules, {len(fails)} problems")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
