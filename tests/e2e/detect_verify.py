#!/usr/bin/env python3
"""suricata-verify's detection tests (../shared/data/detect/suricata-verify) through the detect module.

For each test (a directory with test.yaml): gaspp runs on its capture with `--module
detect:rules=test.rules`, the test's suricata.yaml (`-c`) when it has one, and the arguments of
test.yaml we support (`-k none`, `--simulate-ips`, `--runmode=single`, `--set`; ${TEST_DIR} is the
test's directory, as suricata-verify expands it), and every alert
check of test.yaml (a `filter` whose match has event_type alert) is evaluated against our eve.json
as suricata-verify does: the events whose fields equal every `match` entry are counted and compared
with `count`. Checks of other event types (flow,
stats, http, ...) are not this runner's.

A test whose rules the parser skips for application-layer keywords needs the application layer
(the next stage of the engine) and is reported as such. A test that cannot run as written
(an unsupported --set or option) says why. Prints each failure with its reason and "N passed, M failed"; with --status FILE writes the
table that docs/detect-status.md holds.

Exit status: 1 when a test outside KNOWN_FAILURES fails, or a test listed there passes (the list
must stay true); 0 otherwise.

--prefilter hash runs the detect module with the device's hashed prefilter on the CPU (the
results must not change: the prefilter only picks candidates); --prefilter device also runs pcre
as the device does: the device's regex search, and the host handler for the expressions it cannot
run (stream matches that reach one stay undecided there: tests that show it are listed in
DEVICE_PATH_FAILURES).

usage: detect_verify.py GASPP DATA_DIR [--backend cpu|cuda] [--prefilter hyperscan|hash|device] [--status FILE]
"""
import json
import os
import re
import subprocess
import sys
import tempfile

import yaml

from suricata_verify import check_applies, find_value, matches  # test.yaml filter semantics, shared

# Tests that need only this stage's keywords and still fail, with why (docs/detect-status.md).
KNOWN_FAILURES = {
    "bug-130": "detect.guess-applayer-tx: Suricata gives a stream (not HTTP) signature's alert on an HTTP flow the http object of the transaction it guesses the match belongs to; gaspp gives the http object to HTTP signatures' alerts only",
    "bug-7725-01": "IP-in-IP: Suricata inspects the outer packet (proto IP-in-IP, pkt_src wire/pcap) as well as the inner one (pkt_src \"ipv4 tunnel\"); gaspp inspects the inner packet only",
    "bug-7725-02": "IP-in-IP: Suricata inspects the outer packet (proto IP-in-IP, pkt_src wire/pcap) as well as the inner one (pkt_src \"ipv4 tunnel\"); gaspp inspects the inner packet only",
    "bug-7725-03": "IP-in-IP: Suricata inspects the outer packet (proto IP-in-IP, pkt_src wire/pcap) as well as the inner one (pkt_src \"ipv4 tunnel\"); gaspp inspects the inner packet only",
    "eve-overlap-payload-05-gap": "the checks match a stream alert raised at the flow's end over data with a gap (payload \"VERY[4 bytes missing]DATA\", pkt_src \"stream (flow timeout)\"): gaspp inspects no stream across a gap and writes stream alerts with the delivering packet's payload",
    "eve-payload-05-tcp-data-gap": "the checks match a stream alert raised at the flow's end over data with a gap (payload \"VERY[4 bytes missing]DATA\", pkt_src \"stream (flow timeout)\"): gaspp inspects no stream across a gap and writes stream alerts with the delivering packet's payload",
    "smb1-03-midstream": "picked up midstream at the server's response: Suricata's SMB protocol detection turns the flow around, so the client's request is to_server; gaspp keeps the first packet's sender as the client (no SMB parser)",
    # HTTP (the application layer's first stage)
    "http-evader/http-evader-405": "a deformed end of the header block (CR/LF mixes): where libhtp's headers end differs from gaspp's",
}


# More failures of --prefilter device (the device's path on the CPU): stream matches that reach a
# pcre without a program for the device's search stay undecided there (stream_pcre_undecided in
# the stats). None in this set since the device runs regular pcres itself.
DEVICE_PATH_FAILURES = {
}


def alert_checks(spec):
    out = []
    for check in spec.get("checks", []) or []:
        flt = check.get("filter") if isinstance(check, dict) else None
        if not flt or flt.get("match", {}).get("event_type") != "alert":
            continue
        if not check_applies(flt):  # a check for another Suricata version than the one gaspp follows
            continue
        out.append(flt)
    return out


def translate_args(spec, test_dir):
    """Our arguments for test.yaml's `args`, or (None, why) when we cannot run it as written."""
    raw = spec.get("args") or []
    words = []
    for a in raw:
        # ${TEST_DIR}: the test's directory, as suricata-verify's run.py expands it.
        words += str(a).replace("${TEST_DIR}", test_dir).split()
    # Suricata's default is stream.midstream: false (gaspp's is on).
    ours, i, bpf = ["--midstream", "off"], 0, []
    while i < len(words):
        w = words[i]
        if w == "-k" and i + 1 < len(words):
            ours += ["-k", words[i + 1]]
            i += 2
            continue
        if w == "--set" and i + 1 < len(words):
            kv = words[i + 1]
            if kv == "stream.midstream=true":
                ours[1] = "on"
                i += 2
                continue
            # Others go to gaspp's --set, which reads what it supports and lists what it ignores
            # (stream.reassembly.depth=0, no depth limit, is what gaspp always does).
            ours += ["--set", kv]
            i += 2
            continue
        if w == "--runmode=single":
            i += 1  # one packet thread: gaspp's results do not depend on its threads
            continue
        if w == "--simulate-ips":
            ours.append(w)  # accepted: gaspp processes a capture as an IPS does (docs/rules.md)
            i += 1
            continue
        if not w.startswith("-"):
            # Suricata's trailing BPF filter (as tcpdump's): gaspp takes the same words.
            bpf.append(w)
            i += 1
            continue
        return None, f"runs with {w}"
    return ours + bpf, None


# The optional features of Suricata's builds that gaspp has (suricata-verify's feature names).
HAVE_FEATURES = {"HAVE_JA3"}


def nearest(events, match):
    """For GASPP_DV_DIFF=1: the entries of `match` that the closest event of its type misses."""
    best = None
    for ev in events:
        if "event_type" in match and ev.get("event_type") != match["event_type"]:
            continue
        miss = {k: find_value(k, ev) for k, v in match.items() if not matches(ev, {k: v})}
        if best is None or len(miss) < len(best):
            best = miss
    return f" [closest event differs in {best}]" if best else " [no event of that type]"


def run_one(gaspp, test_dir, spec, backend, prefilter, classes=None):
    # The capture: test.yaml's `pcap`, else the directory's one capture (suricata-verify's rule).
    if isinstance(spec.get("pcap"), str):
        pcap = os.path.join(test_dir, spec["pcap"])
    else:
        caps = sorted(f for f in os.listdir(test_dir) if f.endswith((".pcap", ".pcapng")))
        if not caps and (spec.get("requires") or {}).get("pcap") is False:
            return "skip", "no capture (pcap: false)"
        if len(caps) != 1:
            return "fail", f"{len(caps)} captures and no `pcap` in test.yaml"
        pcap = os.path.join(test_dir, caps[0])
    # The rules: test.yaml's `rules`, else the directory's one *.rules file (suricata-verify's
    # run.py); a firewall.rules file (with td.rules) runs Suricata's firewall mode, not this runner's.
    if spec.get("rules"):
        rule_files = [os.path.join(test_dir, spec["rules"])]
    else:
        rule_files = sorted(os.path.join(test_dir, f) for f in os.listdir(test_dir) if f.endswith(".rules"))
    # suricata-verify's `skip`: the test is not for builds with a feature gaspp has (JA3).
    for entry in spec.get("skip") or []:
        if isinstance(entry, dict) and entry.get("feature") in HAVE_FEATURES:
            return "skip", f"not for builds with {entry['feature']}"
    checks = alert_checks(spec)
    if not checks:
        return "skip", "no alert checks"
    if not rule_files:
        return "skip", "no rules file"
    if len(rule_files) > 1 or rule_files[0].endswith("firewall.rules"):
        return "skip", "firewall mode (firewall.rules)"
    rules = rule_files[0]
    args, why = translate_args(spec, test_dir)
    with tempfile.TemporaryDirectory() as d:
        cmd = [gaspp, "-r", pcap, "--backend", backend, "-l", d, "--flow-capacity", "4096"]
        # The test's suricata.yaml, as suricata-verify gives it (gaspp reads vars, action-order, flow,
        # stream and defrag settings from it and lists the sections it ignores).
        conf = os.path.join(test_dir, "suricata.yaml")
        if os.path.exists(conf):
            cmd += ["-c", conf]
        # Suricata's classification.config when the test has none beside its rules (run.py passes
        # Suricata's own with --set classification-file): categories and severities of classtypes.
        mod = f"detect:rules={rules},prefilter={prefilter}"
        if classes and not os.path.exists(os.path.join(os.path.dirname(rules), "classification.config")):
            mod += f",classification-file={classes}"
        cmd += ["--module", mod] + (args or ["--midstream", "off"])
        p = subprocess.run(cmd, capture_output=True, text=True)
        m = re.search(r"detect: .*?(\d+) skipped.*?; (\d+) need the application layer", p.stderr)
        app = int(m.group(2)) if m else 0
        errors = len(re.findall(r"rule skipped:", p.stderr))
        # Exit status 2: the capture is damaged, the packets before the damage processed and the
        # outputs written (docs/usage.md); Suricata too reads a capture up to its damage, logs the
        # error and inspects what it read, so the checks apply.
        if p.returncode not in (0, 2):
            return "fail", f"gaspp failed: {p.stderr.strip().splitlines()[-1] if p.stderr.strip() else p.returncode}"
        with open(os.path.join(d, "eve.json")) as f:
            events = [json.loads(line) for line in f if line.strip()]
    fails = []
    for flt in checks:
        got = sum(1 for ev in events if matches(ev, flt.get("match", {})))
        if got != flt.get("count"):
            fails.append(f"{ {k: v for k, v in flt['match'].items() if k != 'event_type'} } counted {got}, want {flt.get('count')}"
                         + (nearest(events, flt.get("match", {})) if os.environ.get("GASPP_DV_DIFF") else ""))
    if not fails:
        return "pass", ""
    if app:
        return "app", f"{app} rule(s) need the application layer; " + "; ".join(fails)
    if errors:
        return "fail", f"{errors} rule(s) did not parse; " + "; ".join(fails)
    if why:
        return "fail", why + "; " + "; ".join(fails)
    return "fail", "; ".join(fails)


def main():
    args = sys.argv[1:]
    opts = {"--backend": "cpu", "--status": None, "--prefilter": "hyperscan"}
    for flag in list(opts):
        if flag in args:
            i = args.index(flag)
            opts[flag] = args[i + 1]
            del args[i:i + 2]
    backend, status, prefilter = opts["--backend"], opts["--status"], opts["--prefilter"]
    gaspp, data = args
    root = os.path.join(data, "detect", "suricata-verify")
    classes = os.path.join(data, "eve", "classification.config")
    classes = classes if os.path.exists(classes) else None
    tests = sorted(os.path.relpath(r, root) for r, _, f in os.walk(root) if "test.yaml" in f)
    results = {}
    for t in tests:
        with open(os.path.join(root, t, "test.yaml")) as f:
            spec = yaml.safe_load(f) or {}
        results[t] = run_one(gaspp, os.path.join(root, t), spec, backend, prefilter, classes)
    passed = [t for t, (k, _) in results.items() if k == "pass"]
    app = [t for t, (k, _) in results.items() if k == "app"]
    fail = [t for t, (k, _) in results.items() if k == "fail"]
    skip = [t for t, (k, _) in results.items() if k == "skip"]
    for t in fail:
        print(f"FAIL {t}: {results[t][1]}")
    known = dict(KNOWN_FAILURES)
    if prefilter == "device":
        known.update(DEVICE_PATH_FAILURES)
    unexpected = [t for t in fail if t not in known]
    fixed = [t for t in known if results.get(t, ("", ""))[0] == "pass"]
    print(f"{len(passed)} passed, {len(fail) + len(app)} failed ({len(app)} need the application layer, "
          f"{len(fail)} do not), {len(skip)} without alert checks; backend {backend}, prefilter {prefilter}")
    if status:
        with open(status, "w") as f:
            f.write("| test | result | why |\n|---|---|---|\n")
            for t in tests:
                k, why = results[t]
                if k == "fail" and t in known:
                    why = known[t]
                f.write(f"| {t} | {k} | {why[:300].replace('|', '/')} |\n")
    for t in unexpected:
        print(f"UNEXPECTED FAILURE {t}")
    for t in fixed:
        print(f"NOW PASSES (remove from KNOWN_FAILURES) {t}")
    return 1 if unexpected or fixed else 0


if __name__ == "__main__":
    sys.exit(main())
