#!/usr/bin/env python3
"""EVE `smtp` events against tshark: on every capture in ../shared/data/pcaps whose TCP
connections tshark's SMTP dissector reads commands of (`smtp.req.command`), the mails of each
connection, in order, as gaspp logs them must be tshark's:
  * mail_from: the parameter of MAIL (tshark's smtp.req.parameter "FROM:<a@b> SIZE=1") after the
    colon and spaces, up to the next space; rcpt_to: the same of each RCPT of the mail;
  * helo: the parameter of the connection's first HELO or EHLO;
  * the email object (a mail whose message tshark's IMF dissector read): from, subject as
    tshark's imf.from and imf.subject; to and cc as imf.to and imf.cc split at commas, each
    trimmed (folding line breaks removed), and status PARSE_DONE.
A mail is what lies between MAIL commands (RSET, a new HELO/EHLO and QUIT end one; tshark's
transactions are built the same way from its fields here). Every event must also validate against
Suricata's EVE schema (eve_schema.py checks all captures).

Then the envelope's buffers: on each such capture, a rule per MAIL FROM address (smtp.mail_from),
per recipient (smtp.rcpt_to) and per HELO name (smtp.helo), each with its bsize, must alert once
per mail tshark reads that address or name in (with app_proto smtp), and a rule on an address no
mail has, never.

usage: smtp_vs_tshark.py GASPP DATA_DIR [--backend cpu|cuda]
"""
import glob
import ipaddress
import json
import os
import subprocess
import sys
import tempfile

from app_rule_counts import content_escape, run_rule_counts, split_backend


def norm(a):
    return str(ipaddress.ip_address(a))


def fields(pcap, flt, names):
    out = subprocess.run(["tshark", "-r", pcap, "-Y", flt, "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=\x1f"] +
                         sum([["-e", n] for n in names], []), capture_output=True, text=True).stdout
    return [line.split("\t") for line in out.splitlines()]


def endpoints(f):
    src = (norm((f[0] or f[1]).split("\x1f")[-1]), int(f[2].split("\x1f")[0]))
    dst = (norm((f[3] or f[4]).split("\x1f")[-1]), int(f[5].split("\x1f")[0]))
    return src, dst


ADDR = ["ip.src", "ipv6.src", "tcp.srcport", "ip.dst", "ipv6.dst", "tcp.dstport"]


def param(text, prefix):
    """The parameter after 'FROM:' / 'TO:' as Suricata takes it."""
    t = text[len(prefix):] if text.upper().startswith(prefix) else text.split(":", 1)[-1]
    return t.lstrip(" ").split(" ")[0]


def split_list(v):
    return [x.strip(" \t\r\n") for x in v.replace("\\r\\n", "\r\n").split(",") if x.strip(" \t\r\n")]


def tshark_mails(pcap):
    """{connection: (helo, [mail dicts])}."""
    conns = {}
    for f in fields(pcap, "smtp.req.command", ADDR + ["smtp.req.command", "smtp.req.parameter"]):
        src, dst = endpoints(f)
        key = frozenset([src, dst])
        cmds = f[6].split("\x1f")
        params = f[7].split("\x1f") if len(f) > 7 else []
        c = conns.setdefault(key, {"helo": None, "mails": [], "open": None})
        for k, cmd in enumerate(cmds):
            cmd = cmd.upper()
            p = params[k] if k < len(params) else ""
            if cmd in ("HELO", "EHLO"):
                if c["helo"] is None:
                    c["helo"] = p.split(" ")[0]
                c["open"] = None
            elif cmd == "MAIL":
                c["open"] = {"mail_from": param(p, "FROM:"), "rcpt_to": []}
                c["mails"].append(c["open"])
            elif cmd == "RCPT" and c["open"] is not None:
                c["open"]["rcpt_to"].append(param(p, "TO:"))
            elif cmd in ("RSET", "QUIT"):
                c["open"] = None
    # Messages, in order per connection: the k-th message belongs to the k-th mail that has DATA.
    msgs = {}
    for f in fields(pcap, "imf", ADDR + ["imf.from", "imf.to", "imf.cc", "imf.subject"]):
        src, dst = endpoints(f)
        msgs.setdefault(frozenset([src, dst]), []).append(
            {"from": f[6], "to": split_list(f[7]), "cc": split_list(f[8]), "subject": f[9]})
    return conns, msgs


def gaspp_mails(gaspp, pcap, backend, d):
    out = os.path.join(d, "out")
    subprocess.run(["rm", "-rf", out])
    os.makedirs(out)
    p = subprocess.run([gaspp, "-r", pcap, "--backend", backend, "-q", "--app-layer", "-l", out], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"FAIL: gaspp {pcap}: exit {p.returncode}: {p.stderr.strip()[-300:]}")
    res = {}
    for line in open(os.path.join(out, "eve.json")):
        e = json.loads(line)
        if e.get("event_type") != "smtp":
            continue
        key = frozenset([(norm(e["src_ip"]), e["src_port"]), (norm(e["dest_ip"]), e["dest_port"])])
        res.setdefault(key, []).append(e)
    for k in res:
        res[k].sort(key=lambda e: e["tx_id"])
    return res


def envelope_rules(gaspp, pcap, backend, conns, d):
    """The smtp.mail_from / smtp.rcpt_to / smtp.helo rules on one capture: (failures, rules)."""
    mails = [(c["helo"], m) for c in conns.values() for m in c["mails"]]
    rules, want = [], {}

    def rule(buf, v, n):
        sid = len(rules) + 1
        rules.append(f'alert smtp any any -> any any (msg:"env {sid}"; flow:to_server; {buf}; content:"{content_escape(v)}"; '
                     f'bsize:{len(v.encode())}; sid:{sid}; rev:1;)')
        want[sid] = n

    for v in sorted({m["mail_from"] for _, m in mails if m["mail_from"]}):
        rule("smtp.mail_from", v, sum(1 for _, m in mails if m["mail_from"] == v))
    for v in sorted({r for _, m in mails for r in m["rcpt_to"] if r}):
        rule("smtp.rcpt_to", v, sum(1 for _, m in mails if v in m["rcpt_to"]))
    for v in sorted({h for h, _ in mails if h}):
        rule("smtp.helo", v, sum(1 for h, _ in mails if h == v))
    rule("smtp.mail_from", "nobody@nowhere.invalid", 0)
    return run_rule_counts(gaspp, pcap, backend, rules, want, d, "smtp", "tshark's mails")


def main():
    backend, args = split_backend(sys.argv[1:])
    gaspp, data = args[:2]
    caps = sorted(c for c in glob.glob(os.path.join(data, "pcaps", "**", "*.pcap*"), recursive=True)
                  if c.endswith((".pcap", ".pcapng")))
    failed = compared = mails = env_rules = 0
    with tempfile.TemporaryDirectory() as d:
        for cap in caps:
            # A capture without these words (any case) has no SMTP command for tshark to read and
            # no mail for gaspp to log (a mail needs MAIL FROM or RCPT TO, a session HELO or EHLO):
            # both sides are skipped, which keeps the test's time to the captures with SMTP.
            with open(cap, "rb") as f:
                raw = f.read().lower()
            if not any(w in raw for w in (b"ehlo", b"helo", b"mail from", b"rcpt to")):
                continue
            conns, msgs = tshark_mails(cap)
            got = gaspp_mails(gaspp, cap, backend, d)
            name = os.path.relpath(cap, data)
            for key, c in conns.items():
                want = c["mails"]
                events = got.get(key, [])
                compared += 1
                if len(events) != len(want):
                    print(f"FAIL {name} {sorted(key)}: {len(events)} smtp events, tshark has {len(want)} mails")
                    failed += 1
                    continue
                with_data = [e for e in events if "email" in e]
                for k, (e, w) in enumerate(zip(events, want)):
                    mails += 1
                    s = e.get("smtp", {})
                    problems = []
                    if s.get("mail_from") != w["mail_from"]:
                        problems.append(f"mail_from {s.get('mail_from')!r} != {w['mail_from']!r}")
                    if s.get("rcpt_to", []) != w["rcpt_to"]:
                        problems.append(f"rcpt_to {s.get('rcpt_to')} != {w['rcpt_to']}")
                    if c["helo"] is not None and s.get("helo") != c["helo"]:
                        problems.append(f"helo {s.get('helo')!r} != {c['helo']!r}")
                    if problems:
                        failed += 1
                        print(f"FAIL {name} mail {k}: " + "; ".join(problems))
                for k, m in enumerate(msgs.get(key, [])):
                    if k >= len(with_data):
                        failed += 1
                        print(f"FAIL {name}: message {k} (tshark) has no email object")
                        continue
                    em = with_data[k]["email"]
                    problems = []
                    for field in ("from", "subject"):
                        if em.get(field, "") != m[field]:
                            problems.append(f"{field} {em.get(field)!r} != {m[field]!r}")
                    for field in ("to", "cc"):
                        if em.get(field, []) != m[field]:
                            problems.append(f"{field} {em.get(field)} != {m[field]}")
                    if em.get("status") != "PARSE_DONE":
                        problems.append(f"status {em.get('status')}")
                    if problems:
                        failed += 1
                        print(f"FAIL {name} message {k}: " + "; ".join(problems))
            if conns:
                bad, n = envelope_rules(gaspp, cap, backend, conns, d)
                env_rules += n
                for b in bad:
                    failed += 1
                    print(f"FAIL {name}: {b}")
            extra = set(got) - set(conns)
            for key in extra:
                failed += 1
                print(f"FAIL {name} {sorted(key)}: smtp events where tshark reads no SMTP command")
    print(f"{compared} SMTP connections, {mails} mails compared with tshark ({backend}), {env_rules} envelope rules, "
          f"{failed} failures")
    if compared == 0 or env_rules == 0:
        print("FAIL: no capture with SMTP")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
