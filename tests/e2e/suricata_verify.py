#!/usr/bin/env python3
"""suricata-verify tests run through gaspp, judged by their own test.yaml.

Each test directory holds input.pcap, a rules file and test.yaml. We run gaspp on the capture with
the rules (`firewall.rules` as --firewall-rules, `test.rules` as --rules), EVE output with drop
events, and evaluate every check of test.yaml against our eve.json the way suricata-verify does:
a `filter` check counts the events whose fields equal every `match` entry (dotted keys reach into
objects) and compares the count. The run is repeated at batch sizes 1, 3 and the default: the
result must not depend on where batches end. A check of another kind, or a key test.yaml uses that
this runner does not implement, fails the test rather than being skipped.

Beyond test.yaml, as Suricata's EVE does: every drop event of a packet of a logged flow carries that
flow's flow_id, and its direction says whether the packet came from the flow's source (to_server)
or went to it (to_client) — also for packets dropped by their flow's earlier decision, which no
module saw. The flow events are the oracle.

usage: suricata_verify.py GASPP DATA_DIR [--backend cpu|cuda]
"""
import json
import os
import re
import subprocess
import sys
import tempfile

import yaml

TESTS = ["firewall/ruletype-firewall-31-retrans-of-drop"]
BATCHES = [None, "1", "3"]


def find_value(name, obj):
    """suricata-verify's find_value (run.py): a dotted path with [N] indexes and __len; None when
    absent. Stops at an operator suffix (__contains, __gt, ...) and returns the object there."""
    for part in name.split("."):
        if part == "__len":
            try:
                return len(obj)
            except TypeError:
                return -1
        if part in ("__contains", "__find", "__startswith", "__endswith") or part in COMPARISONS:
            break
        m = re.match(r"^(.*)\[(\d+)\]$", part)
        key, index = (m.group(1), int(m.group(2))) if m else (part, None)
        if not isinstance(obj, dict) or key not in obj:
            return None
        obj = obj[key]
        if index is not None:
            try:
                obj = obj[index]
            except (IndexError, KeyError, TypeError):
                return None
    return obj


COMPARISONS = {"__gt": lambda a, b: a > b, "__gte": lambda a, b: a >= b, "__lt": lambda a, b: a < b,
               "__lte": lambda a, b: a <= b}


def matches(ev, match):
    """suricata-verify's FilterCheck.match: every entry of `match` holds for the event."""
    for key, want in match.items():
        if key in ("has-key", "not-has-key"):
            for item in (want if isinstance(want, list) else [want]):
                if (find_value(item, ev) is None) != (key == "not-has-key"):
                    return False
            continue
        got = find_value(key, ev)
        suffix = key.rsplit(".", 1)[-1]
        try:
            if suffix == "__find":
                ok = got.find(want) >= 0
            elif suffix == "__contains":
                ok = want in got
            elif suffix == "__startswith":
                ok = got.startswith(want)
            elif suffix == "__endswith":
                ok = got.endswith(want)
            elif suffix in COMPARISONS:
                ok = (isinstance(got, (int, float)) and not isinstance(got, bool) and
                      isinstance(want, (int, float)) and COMPARISONS[suffix](got, want))
            else:
                ok = got == want
        except (AttributeError, TypeError):
            ok = False
        if not ok:
            return False
    return True


# The Suricata version whose behaviour gaspp follows, for checks that name one (`requires` of a
# filter: min-version, lt-version).
SURICATA_VERSION = (8, 0, 7)


def version_tuple(v):
    parts = [int(x) for x in re.findall(r"\d+", str(v))][:3]
    return tuple(parts + [0] * (3 - len(parts)))


def check_applies(flt):
    """Whether a filter's `requires` (versions) holds for the version gaspp follows."""
    req = flt.get("requires") or {}
    if "min-version" in req and SURICATA_VERSION < version_tuple(req["min-version"]):
        return False
    if "lt-version" in req and SURICATA_VERSION >= version_tuple(req["lt-version"]):
        return False
    return True


def run_test(gaspp, test_dir, backend, batch, d):
    args = [gaspp, "-r", os.path.join(test_dir, "input.pcap"), "--backend", backend, "-q", "-l", d, "--eve-drops"]
    for name, flag in (("firewall.rules", "--firewall-rules"), ("test.rules", "--rules")):
        if os.path.exists(os.path.join(test_dir, name)):
            args += [flag, os.path.join(test_dir, name)]
    if batch:
        args += ["--batch", batch]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"gaspp failed on {test_dir}: {p.stderr}")
    with open(os.path.join(d, "eve.json")) as f:
        return [json.loads(line) for line in f if line.strip()]


def evaluate(events, spec):
    failures = []
    for n, check in enumerate(spec.get("checks", [])):
        if set(check) != {"filter"}:
            failures.append(f"check {n}: kind {sorted(check)} not implemented")
            continue
        flt = check["filter"]
        unknown = set(flt) - {"count", "match"}
        if unknown:
            failures.append(f"check {n}: filter keys {sorted(unknown)} not implemented")
            continue
        got = sum(1 for ev in events if matches(ev, flt.get("match", {})))
        if got != flt["count"]:
            failures.append(f"check {n}: {flt.get('match')} counted {got}, test.yaml wants {flt['count']}")
    return failures


def check_drop_flows(events):
    ends = lambda ip, port: (ip, port)
    flows = [e for e in events if e.get("event_type") == "flow"]
    failures, checked = [], 0
    for n, d in enumerate(e for e in events if e.get("event_type") == "drop"):
        a, b = ends(d.get("src_ip"), d.get("src_port")), ends(d.get("dest_ip"), d.get("dest_port"))
        mine = [f for f in flows if f.get("proto") == d.get("proto") and
                {ends(f.get("src_ip"), f.get("src_port")), ends(f.get("dest_ip"), f.get("dest_port"))} == {a, b}]
        if not mine:
            continue
        checked += 1
        f = next((f for f in mine if f["flow_id"] == d.get("flow_id")), None)
        if f is None:
            failures.append(f"drop event {n} (pcap_cnt {d.get('pcap_cnt')}): flow_id {d.get('flow_id')}, "
                            f"its flow's is {[f['flow_id'] for f in mine]}")
            continue
        want = "to_server" if a == ends(f.get("src_ip"), f.get("src_port")) else "to_client"
        if d.get("direction") != want:
            failures.append(f"drop event {n} (pcap_cnt {d.get('pcap_cnt')}): direction {d.get('direction')}, want {want}")
    return failures, checked


def main():
    args = sys.argv[1:]
    backend = "cpu"
    if "--backend" in args:
        i = args.index("--backend")
        backend = args[i + 1]
        del args[i:i + 2]
    gaspp, data = args
    root = os.path.join(data, "pcaps", "suricata-verify")
    failed = 0
    for t in TESTS:
        test_dir = os.path.join(root, t)
        if not os.path.isdir(test_dir):
            print(f"MISSING {t}")
            failed += 1
            continue
        with open(os.path.join(test_dir, "test.yaml")) as f:
            spec = yaml.safe_load(f)
        for batch in BATCHES:
            with tempfile.TemporaryDirectory() as d:
                events = run_test(gaspp, test_dir, backend, batch, d)
            fails = evaluate(events, spec)
            drop_fails, drops = check_drop_flows(events)
            fails += drop_fails
            label = f"{t} (batch {batch or 'default'}, {backend})"
            if fails:
                failed += 1
                print(f"FAIL {label}")
                for x in fails:
                    print(f"       {x}")
            else:
                print(f"ok   {label}: {len(spec['checks'])} checks pass; {drops} drop events carry their flow's id")
    print(f"{len(TESTS)} suricata-verify tests x {len(BATCHES)} batch sizes, {failed} failures")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
