#!/usr/bin/env python3
"""The modules through the command line, against references computed here from the capture:

  * `-w` with no module writes the input back byte for byte;
  * a firewall rule set over a real capture: the `-w` output equals the input minus the packets the
    reference drops (a flow is dropped from its first packet that matches a drop rule on, both
    directions), record for record and byte for byte; EVE alerts name the expected packets; the flow
    events of dropped flows say action drop and alerted; a rule line that does not parse is
    reported with file and line and the run goes on;
  * `--dump-packets` with a probe module that sends port-P packets to the dump.

usage: modules_cli.py GASPP DATA_DIR [--backend cpu|cuda]
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

failures = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL", msg)


def records(path):
    """(header, [record bytes including the 16-byte header]) of a classic pcap."""
    data = open(path, "rb").read()
    magic = struct.unpack("<I", data[:4])[0]
    end = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    out, off = [], 24
    while off + 16 <= len(data):
        cap = struct.unpack(end + "I", data[off + 8:off + 12])[0]
        out.append(data[off:off + 16 + cap])
        off += 16 + cap
    return data[:24], out


def five_tuple(rec):
    """(proto, src, sport, dst, dport) of an Ethernet/VLAN/IPv4/IPv6 TCP/UDP frame, or None."""
    f = rec[16:]
    off, et = 14, struct.unpack(">H", f[12:14])[0]
    while et in (0x8100, 0x88A8) and len(f) >= off + 4:
        et = struct.unpack(">H", f[off + 2:off + 4])[0]
        off += 4
    if et == 0x0800 and len(f) >= off + 20:
        ihl = (f[off] & 15) * 4
        proto, src, dst = f[off + 9], f[off + 12:off + 16], f[off + 16:off + 20]
        frag = struct.unpack(">H", f[off + 6:off + 8])[0] & 0x3FFF
        l4 = off + ihl
        if frag:
            return None
    elif et == 0x86DD and len(f) >= off + 40:
        proto, src, dst = f[off + 6], f[off + 8:off + 24], f[off + 24:off + 40]
        l4 = off + 40
    else:
        return None
    if proto in (6, 17) and len(f) >= l4 + 4:
        sp, dp = struct.unpack(">HH", f[l4:l4 + 4])
        return (proto, src, sp, dst, dp)
    return (proto, src, 0, dst, 0)


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, **kw)


def main():
    gaspp, data = sys.argv[1], sys.argv[2]
    backend = sys.argv[sys.argv.index("--backend") + 1] if "--backend" in sys.argv else "cpu"
    tmp = tempfile.mkdtemp(prefix="gaspp-modules-")
    base = [gaspp, "--backend", backend, "-q"]

    # 1. -w alone: the input again.
    src = os.path.join(data, "pcaps", "zeek", "http-bro.org.pcap")
    out = os.path.join(tmp, "same.pcap")
    r = run(base + ["-r", src, "-w", out])
    if r.returncode != 0 or open(out, "rb").read() != open(src, "rb").read():
        fail("-w without modules is not the input byte for byte (%s)" % r.stderr.strip())
    else:
        print("ok   -w without modules: identical to the input")

    # 2. A firewall over a capture with several connections.
    src = os.path.join(data, "pcaps", "ndpi", "bittorrent.pcap")
    if not os.path.exists(src):
        src = os.path.join(data, "pcaps", "zeek", "http-bro.org.pcap")
    _, recs = records(src)
    tuples = [five_tuple(x) for x in recs]
    ports = {}
    for t in tuples:
        if t and t[0] == 6:
            ports[t[4]] = ports.get(t[4], 0) + 1
    # Drop TCP to the second busiest destination port; alert on UDP; a broken line.
    target = sorted(ports.items(), key=lambda kv: -kv[1])[min(1, len(ports) - 1)][0]
    rules = os.path.join(tmp, "fw.rules")
    with open(rules, "w") as f:
        f.write("drop tcp any any -> any %d (msg:\"drop port %d\"; sid:10; rev:2;)\n" % (target, target))
        f.write("alert udp any any -> any any (msg:\"udp\"; sid:11;)\n")
        f.write("drop tcp any any -> any (msg:\"broken\"; sid:12;)\n")
    want_drop, decided, want_alerts = [], set(), []
    for n, t in enumerate(tuples, 1):
        if t is None:
            want_drop.append(False)
            continue
        key = (t[0],) + tuple(sorted([(t[1], t[2]), (t[3], t[4])]))
        if key in decided:
            want_drop.append(True)
            continue
        if t[0] == 6 and t[4] == target:
            decided.add(key)
            want_drop.append(True)
            want_alerts.append((n, 10))
            continue
        want_drop.append(False)
        if t[0] == 17:
            want_alerts.append((n, 11))
    out = os.path.join(tmp, "passed.pcap")
    eve_dir = os.path.join(tmp, "eve")
    os.makedirs(eve_dir)
    r = run(base + ["-r", src, "--rules", rules, "-w", out, "-l", eve_dir, "--batch", "16"])
    if r.returncode != 0:
        fail("firewall run failed: %s" % r.stderr)
    if "fw.rules:3: rule skipped" not in r.stderr:
        fail("the broken rule is not reported with file and line: %s" % r.stderr)
    hdr, got = records(out)
    want = [x for x, d in zip(recs, want_drop) if not d]
    if got != want:
        fail("-w output: %d records, want %d (input %d minus %d dropped)" % (len(got), len(want), len(recs), sum(want_drop)))
    else:
        print("ok   firewall -w: %d of %d records, byte-identical to the input minus the %d dropped"
              % (len(got), len(recs), sum(want_drop)))
    events = [json.loads(l) for l in open(os.path.join(eve_dir, "eve.json"))]
    alerts = sorted((e["pcap_cnt"], e["alert"]["signature_id"]) for e in events if e["event_type"] == "alert")
    if alerts != sorted(want_alerts):
        fail("alerts: %d, want %d" % (len(alerts), len(want_alerts)))
    else:
        print("ok   alerts: %d, on the expected packets" % len(alerts))
    blocked = [e for e in events if e["event_type"] == "alert" and e["alert"]["signature_id"] == 10]
    if any(e["alert"]["action"] != "blocked" or e["alert"]["rev"] != 2 for e in blocked):
        fail("drop-rule alerts must say action blocked, rev 2")
    flows = [e for e in events if e["event_type"] == "flow" and e.get("dest_port") == target and e["proto"] == "TCP"]
    if len(decided) and not any(e["flow"].get("action") == "drop" and e["flow"]["alerted"] for e in flows):
        fail("no flow event says action drop, alerted")
    elif decided:
        print("ok   %d dropped flows; their flow events say action drop, alerted" % len(decided))

    # 2b. A threshold (type limit, one alert per source per hour): one alert per TCP source address.
    th_rules = os.path.join(tmp, "threshold.rules")
    with open(th_rules, "w") as f:
        f.write("alert tcp any any -> any any (msg:\"tcp\"; threshold: type limit, track by_src, count 1, seconds 3600; sid:20;)\n")
    th_eve = os.path.join(tmp, "eve-threshold")
    os.makedirs(th_eve)
    r = run(base + ["-r", src, "--rules", th_rules, "-l", th_eve])
    sources = {t[1] for t in tuples if t and t[0] == 6}
    alerts = [json.loads(l) for l in open(os.path.join(th_eve, "eve.json")) if '"alert"' in l]
    if r.returncode != 0 or len(alerts) != len(sources) or len({a["src_ip"] for a in alerts}) != len(sources):
        fail("threshold limit by_src: %d alerts, want one per TCP source (%d)" % (len(alerts), len(sources)))
    else:
        print("ok   threshold (limit 1 per source per hour): %d alerts, one per TCP source" % len(alerts))

    # 3. --dump-packets with a probe.
    dump = os.path.join(tmp, "dump.pcap")
    r = run(base + ["-r", src, "--module", "probe:dport=%d,action=to_dump" % target, "--dump-packets", dump])
    _, got = records(dump)
    want = [x for x, t in zip(recs, tuples) if t and t[0] in (6, 17) and target in (t[2], t[4])]
    if r.returncode != 0 or got != want:
        fail("--dump-packets: %d records, want %d (%s)" % (len(got), len(want), r.stderr.strip()))
    else:
        print("ok   --dump-packets: the %d packets to or from port %d" % (len(got), target))

    # 4. The same pipeline from a YAML configuration: the same -w output.
    cfg = os.path.join(tmp, "gaspp.yaml")
    with open(cfg, "w") as f:
        f.write("schedule: on\ngather_sms: 0\nmodules:\n  - name: probe\n    dport: 1\n    action: to_dump\n"
                "  - name: firewall\n    rules: [%s]\nclasses:\n  - [0, 1]\n  - [1, 0]\n" % rules)
    out2 = os.path.join(tmp, "passed-config.pcap")
    r = run(base + ["-r", src, "-c", cfg, "-w", out2, "--batch", "16"])
    if r.returncode != 0 or open(out2, "rb").read() != open(out, "rb").read():
        fail("-c config: -w output differs from the flags' (%s)" % r.stderr.strip())
    else:
        print("ok   -c config (two classes, scheduling on): the same -w output as the flags")
    bad = os.path.join(tmp, "bad.yaml")
    with open(bad, "w") as f:
        f.write("modules:\n  - name: firewall\n    rules: [a\n")
    r = run(base + ["-r", src, "-c", bad])
    if r.returncode != 1 or "bad.yaml:" not in r.stderr:
        fail("a broken config is not refused with file and line: %s" % r.stderr.strip())

    # 4b. Configuration variables reach rules given on the command line: $TARGET_PORTS defined only
    # in -c's vars, used by a --rules file, drops what the literal port did.
    var_rules = os.path.join(tmp, "var.rules")
    with open(var_rules, "w") as f:
        f.write("drop tcp any any -> any $TARGET_PORTS (msg:\"drop port %d\"; sid:10; rev:2;)\n" % target)
        f.write("alert udp any any -> any any (msg:\"udp\"; sid:11;)\n")
    var_cfg = os.path.join(tmp, "vars.yaml")
    with open(var_cfg, "w") as f:
        f.write("vars:\n  port-groups:\n    TARGET_PORTS: \"%d\"\n" % target)
    out3 = os.path.join(tmp, "passed-vars.pcap")
    r = run(base + ["-r", src, "-c", var_cfg, "--rules", var_rules, "-w", out3, "--batch", "16"])
    if r.returncode != 0 or open(out3, "rb").read() != open(out, "rb").read():
        fail("-c vars with --rules: -w output differs from the literal rules' (%s)" % r.stderr.strip()[-300:])
    else:
        print("ok   -c variables apply to --rules files: the same -w output as the literal rules")

    # 4c. Loading summary; a directory is refused; firewall mode without a loadable rule drops all.
    r = run(base + ["-r", src, "--rules", rules, "-q"])
    if "rules: 1 rule file processed; 2 rules loaded (2 header-only by the firewall, 0 signatures), 1 skipped" not in r.stderr:
        fail("no Suricata-style loading summary: %s" % r.stderr.strip()[-300:])
    else:
        print("ok   loading summary: 2 rules loaded, 1 skipped")
    for opt in ("--rules", "--firewall-rules"):
        r = run(base + ["-r", src, opt, tmp, "-q"])
        if r.returncode != 1 or "is a directory" not in r.stderr:
            fail("%s DIR: rc %d, %s" % (opt, r.returncode, r.stderr.strip()[-200:]))
    print("ok   --rules DIR and --firewall-rules DIR refused")
    broken = os.path.join(tmp, "broken-fw.rules")
    with open(broken, "w") as f:
        f.write("accept:hook tcp any any -> any (sid:1;)\nfrobnicate:packet ip any any -> any any (sid:2;)\n")
    js = os.path.join(tmp, "fw-none.json")
    r = run(base + ["-r", src, "--firewall-rules", broken, "-q", "--stats-json", js])
    st = json.load(open(js)) if r.returncode == 0 else {}
    if r.returncode != 0 or "NO RULE LOADED" not in r.stderr or st.get("outcome", {}).get("passed") != 0 \
            or st["outcome"]["dropped"] != st["packets"]:
        fail("firewall mode with no loadable rule must drop every packet, loudly: rc %d, %s, %s"
             % (r.returncode, st.get("outcome"), r.stderr.strip()[-300:]))
    else:
        print("ok   firewall mode with no loadable rule: all %d packets dropped, said loudly" % st["packets"])

    # 5. Bad module specifications are refused with a reason.
    for args, why in ((["--module", "nosuch"], "unknown module"), (["--module", "probe:action=explode"], "action"),
                      (["--module", "probe:colour=red"], "unknown option")):
        r = run(base + ["-r", src] + args)
        if r.returncode != 1 or why not in r.stderr:
            fail("%s: rc %d, stderr %s" % (args, r.returncode, r.stderr.strip()))
    print("ok   bad module options refused")

    print("%d failures" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
