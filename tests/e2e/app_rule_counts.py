"""Application-layer signatures over a capture, counted against an oracle's expectations (shared
by the tests that compare a protocol's buffers with tshark: ssh_vs_tshark, smtp_vs_tshark)."""
import json
import os
import subprocess


def split_backend(argv):
    """(backend, the other arguments) from a test's command line: `--backend NAME` (default cpu)."""
    args = list(argv)
    backend = "cpu"
    if "--backend" in args:
        i = args.index("--backend")
        backend = args[i + 1]
        del args[i:i + 2]
    return backend, args


def content_escape(v):
    """v as a rule's content string: the characters a content cannot hold bare, as |hex|."""
    return "".join(f"|{ord(c):02x}|" if c in '";\\|' else c for c in v)


def run_rule_counts(gaspp, pcap, backend, rules, want, d, proto, oracle):
    """Runs gaspp's detect module with `rules` (sid N on line N) on pcap and compares each sid's
    alerts with want[sid]; every alert must carry app_proto `proto` and its `proto` object.
    Returns (failures, number of rules); `oracle` names the expectations' source in messages."""
    rf = os.path.join(d, proto + ".rules")
    with open(rf, "w") as f:
        f.write("\n".join(rules) + "\n")
    out = os.path.join(d, proto + "-rules-run")
    subprocess.run(["rm", "-rf", out])
    os.makedirs(out)
    p = subprocess.run([gaspp, "-r", pcap, "--backend", backend, "-q", "-l", out, "--module",
                        f"detect:rules={rf},packet-alert-max=1000"], capture_output=True, text=True)
    if p.returncode != 0:
        return [f"gaspp with {proto} rules exited {p.returncode}: {p.stderr.strip()[-300:]}"], len(rules)
    got, bad = {}, []
    for line in open(os.path.join(out, "eve.json")):
        e = json.loads(line)
        if e.get("event_type") != "alert":
            continue
        sid = e["alert"]["signature_id"]
        got[sid] = got.get(sid, 0) + 1
        if e.get("app_proto") != proto or proto not in e:
            bad.append(f"alert of sid {sid} without app_proto {proto} and the {proto} object")
    for sid, n in want.items():
        if got.get(sid, 0) != n:
            bad.append(f"{rules[sid - 1]}: {got.get(sid, 0)} alerts, {oracle} say {n}")
    return bad, len(rules)
