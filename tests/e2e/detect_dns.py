#!/usr/bin/env python3
"""DNS signature keywords beyond dns.query, on a capture built here (scapy): random requests and
responses over UDP port 53 (several questions, A, AAAA, CNAME, MX, NS, PTR and SOA records in the
answer, authority and additional sections, opcodes and rcodes), and rules whose alert counts the
test computes from the messages it built, as Suricata's DNS keywords read a message
(rust/src/dns/detect.rs, detect-dns-response.c):
  * dns.queries.rrname, dns.answers.rrname (and dns.answer.name), dns.authorities.rrname,
    dns.additionals.rrname: a name of that section, either direction;
  * dns.response.rrname: a response's question names, record names and the data of CNAME, PTR,
    MX and NS records and SOA's mname;
  * dns.opcode, dns.rcode (numbers or names), dns.rrtype (a request's questions' types, a
    response's answers' types: any of them, or Suricata's multi-integer index forms);
  * dataset and datarep on dns.query (isset, isnotset, match subdomain after dotprefix, JSON sets
    (ndjson with a nested value_key, json with array_key), an md5 set
    after to_md5, reputations), from files written here as Suricata reads them;
each signature alerting once per message it matches (every message is a transaction, inspected
in its own direction). The same runs on the device's path (detect:prefilter=device on the CPU) and,
with `cuda`, on the CUDA backend.

usage: detect_dns.py GASPP [cpu|cpu-device|cuda ...]
"""
import random
import sys

from detect_base64 import check_counts

TYPES = {"A": 1, "NS": 2, "CNAME": 5, "SOA": 6, "PTR": 12, "MX": 15, "TXT": 16, "AAAA": 28}
RCODES = {"NOERROR": 0, "FORMERR": 1, "SERVFAIL": 2, "NXDOMAIN": 3, "REFUSED": 5}


def rand_name(rng):
    words = ["mail", "www", "cdn", "api", "evil", "login", "x1", "update", "static", "ns1"]
    tlds = ["example.com", "example.net", "test.org", "corp.local"]
    return ".".join(rng.sample(words, rng.randrange(1, 3))) + "." + rng.choice(tlds)


def build(rng):
    from scapy.all import DNS, DNSQR, DNSRR, DNSRRMX, DNSRRSOA, IP, UDP, Ether
    pk, msgs = [], []
    for k in range(60):
        qs = [(rand_name(rng), rng.choice(["A", "AAAA", "MX", "TXT", "PTR"])) for _ in range(rng.randrange(1, 3))]
        opcode = rng.choice([0, 0, 0, 0, 2, 4])
        qd = [DNSQR(qname=n + ".", qtype=TYPES[t]) for n, t in qs]
        cport = 20000 + k
        eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
        client = f"10.0.0.{1 + k % 3}"
        req = eth / IP(src=client, dst="10.0.0.53") / UDP(sport=cport, dport=53) / DNS(id=k, qr=0, opcode=opcode, rd=1, qd=qd)
        pk.append(req)
        msgs.append({"request": True, "opcode": opcode, "rcode": 0, "queries": qs, "answers": [], "authorities": [],
                     "additionals": [], "client": client})

        def record(rng):
            t = rng.choice(["A", "AAAA", "CNAME", "MX", "NS", "PTR", "TXT"])
            n = rng.choice([qs[0][0], rand_name(rng)])
            data = None
            if t == "A":
                rr = DNSRR(rrname=n + ".", type="A", ttl=60, rdata=f"192.0.2.{rng.randrange(1, 250)}")
            elif t == "AAAA":
                rr = DNSRR(rrname=n + ".", type="AAAA", ttl=60, rdata=f"2001:db8::{rng.randrange(1, 999)}")
            elif t == "TXT":
                rr = DNSRR(rrname=n + ".", type="TXT", ttl=60, rdata="v=spf1 -all")
            elif t == "MX":
                data = rand_name(rng)
                rr = DNSRRMX(rrname=n + ".", ttl=60, preference=10, exchange=data + ".")
            else:
                data = rand_name(rng)
                rr = DNSRR(rrname=n + ".", type=t, ttl=60, rdata=data + ".")
            return rr, (n, t, data)

        def soa(rng):
            n, m = rng.choice(["example.com", "example.net"]), "ns-" + rand_name(rng)
            return DNSRRSOA(rrname=n + ".", ttl=60, mname=m + ".", rname="hostmaster." + n + "."), (n, "SOA", m)

        secs = {"answers": [], "authorities": [], "additionals": []}
        layers = {}
        for sec, count in (("answers", rng.randrange(0, 4)), ("authorities", rng.randrange(0, 2)),
                           ("additionals", rng.randrange(0, 2))):
            layers[sec] = []
            for _ in range(count):
                rr, info = soa(rng) if sec == "authorities" and rng.random() < 0.5 else record(rng)
                secs[sec].append(info)
                layers[sec].append(rr)
        rcode = rng.choice([0, 0, 0, 3, 2, 5])
        resp = eth / IP(src="10.0.0.53", dst=client) / UDP(sport=53, dport=cport) / DNS(
            id=k, qr=1, opcode=opcode, rd=1, ra=1, rcode=rcode, qd=qd, an=layers["answers"], ns=layers["authorities"],
            ar=layers["additionals"])
        pk.append(resp)
        msgs.append({"request": False, "opcode": opcode, "rcode": rcode, "queries": qs, **secs, "client": client})
    return pk, msgs


def response_names(m):
    if m["request"]:
        return []
    out = [n for n, _ in m["queries"]]
    for sec in ("answers", "authorities", "additionals"):
        for n, t, data in m[sec]:
            out.append(n)
            if data is not None:
                out.append(data)
    return out


CLIENTS_HELD = {"10.0.0.1", "10.0.0.3"}


def dataset_files(rng, msgs, d):
    """Suricata's dataset files (string values base64, digests hex, datarep's value,reputation) of
    a sample of the capture's query names, written in d; returns the paths and what they hold."""
    import base64
    import hashlib
    names = sorted({n for m in msgs if m["request"] for n, _ in m["queries"]})
    held = set(rng.sample(names, len(names) // 2))
    parents = {".example.com", ".test.org"}
    md5s = set(rng.sample(names, len(names) // 3))
    reps = {n: rng.randrange(0, 300) for n in rng.sample(names, len(names) // 2)}
    files = {"names": sorted(base64.b64encode(n.encode()).decode() for n in held),
             "parents": sorted(base64.b64encode(n.encode()).decode() for n in parents),
             "md5s": sorted(hashlib.md5(n.encode()).hexdigest() for n in md5s),
             "reps": sorted(f"{base64.b64encode(n.encode()).decode()},{r}" for n, r in reps.items())}
    paths = {}
    for k, lines in files.items():
        paths[k] = f"{d}/{k}.lst"
        with open(paths[k], "w") as f:
            f.write("\n".join(lines) + "\n\n")  # an empty line: passed over
    # The same names as JSON sets (Suricata 8's datajson): ndjson with a nested value, and json with
    # the array under a key.
    import json
    paths["ndjson"] = f"{d}/names.ndjson"
    with open(paths["ndjson"], "w") as f:
        f.write("".join(json.dumps({"ioc": {"name": n}, "n": k}) + "\n" for k, n in enumerate(sorted(held))))
    paths["json"] = f"{d}/md5s.json"
    with open(paths["json"], "w") as f:
        json.dump({"list": [{"h": hashlib.md5(n.encode()).hexdigest()} for n in sorted(md5s)]}, f)
    paths["clients"] = f"{d}/clients.lst"
    with open(paths["clients"], "w") as f:
        f.write("10.0.0.1\n::ffff:10.0.0.3\n")  # an IPv4-mapped address is the IPv4 one
    return paths, held, parents, md5s, reps


def rules_for(rng, msgs, ds=None):
    rules, want = [], {}

    def rule(text, pred):
        sid = len(rules) + 1
        rules.append(f'alert dns any any -> any any (msg:"dns {sid}"; {text} sid:{sid}; rev:1;)')
        want[sid] = sum(1 for m in msgs if pred(m))

    sections = {"dns.queries.rrname": lambda m: [n for n, _ in m["queries"]],
                "dns.answers.rrname": lambda m: [r[0] for r in m["answers"]],
                "dns.answer.name": lambda m: [r[0] for r in m["answers"]],
                "dns.authorities.rrname": lambda m: [r[0] for r in m["authorities"]],
                "dns.additionals.rrname": lambda m: [r[0] for r in m["additionals"]],
                "dns.response.rrname": response_names}
    for buf, names in sections.items():
        pool = sorted({n for m in msgs for n in names(m)})
        for n in rng.sample(pool, min(6, len(pool))) + ["absent.invalid"]:
            rule(f'{buf}; content:"{n}"; bsize:{len(n)};', lambda m, n=n, names=names: n in names(m))
        # a piece of a name, any message's (nocase)
        rule(f'{buf}; content:"EXAMPLE.NET"; nocase; endswith;',
             lambda m, names=names: any(x.endswith("example.net") for x in names(m)))
    for v, pred in [("0", lambda m: m["opcode"] == 0), ("!0", lambda m: m["opcode"] != 0), ("4", lambda m: m["opcode"] == 4),
                    ("1-5", lambda m: 1 < m["opcode"] < 5)]:
        rule(f"dns.opcode:{v};", pred)
    for v, pred in [("NXDOMAIN", lambda m: m["rcode"] == 3), ("!0", lambda m: m["rcode"] != 0), ("2", lambda m: m["rcode"] == 2),
                    ("refused", lambda m: m["rcode"] == 5)]:
        rule(f"dns.rcode:{v};", pred)

    def types_of(m):
        return [TYPES[t] for _, t in m["queries"]] if m["request"] else [TYPES[r[1]] for r in m["answers"]]

    for v, num in [("AAAA", 28), ("MX", 15), ("1", 1), ("CNAME", 5), ("!1", None)]:
        if num is None:
            rule(f"dns.rrtype:{v};", lambda m: any(t != 1 for t in types_of(m)))
        else:
            rule(f"dns.rrtype:{v};", lambda m, num=num: num in types_of(m))
    # Suricata's multi-integer index forms: the type at a position (from the end when negative;
    # oob_or: also when there is none), all of them (none: no match), all or none, any or none.
    at = lambda ts, i: ts[i] if -len(ts) <= i < len(ts) else None
    for v, pred in [("1,0", lambda ts: at(ts, 0) == 1), ("A,-1", lambda ts: at(ts, -1) == 1),
                    ("MX,1", lambda ts: at(ts, 1) == 15), ("5,oob_or 1", lambda ts: len(ts) < 2 or ts[1] == 5),
                    ("1,all", lambda ts: bool(ts) and all(t == 1 for t in ts)),
                    ("!5,all_or_absent", lambda ts: all(t != 5 for t in ts)),
                    ("28,or_absent", lambda ts: not ts or 28 in ts), ("<10,any", lambda ts: any(t < 10 for t in ts))]:
        rule(f"dns.rrtype:{v};", lambda m, pred=pred: pred(types_of(m)))
    rule('flow:to_client; dns.rcode:3; dns.queries.rrname; content:"evil";',
         lambda m: not m["request"] and m["rcode"] == 3 and any("evil" in n for n, _ in m["queries"]))
    rule('flow:to_server; dns.rrtype:MX; dns.query; content:"mail";',
         lambda m: m["request"] and 15 in types_of(m) and any("mail" in n for n, _ in m["queries"]))
    if ds:
        # Datasets (Suricata's detect-dataset.c, detect-datarep.c) on dns.query, each question's name
        # of a request: loaded from the files above (absolute paths, allowed by the module option
        # datasets-allow-absolute=yes), compared byte for byte.
        paths, held, parents, md5s, reps = ds
        qnames = lambda m: [n for n, _ in m["queries"]] if m["request"] else []
        rule(f"dns.query; dataset:isset,names,type string,load {paths['names']};",
             lambda m: any(n in held for n in qnames(m)))
        rule(f"dns.query; dataset:isnotset,names,type string,load {paths['names']};",
             lambda m: any(n not in held for n in qnames(m)))
        # match subdomain: the name's suffixes from each '.', after dotprefix the name itself too
        rule(f"dns.query; dotprefix; dataset:isset,parents,type string,load {paths['parents']},match subdomain;",
             lambda m: any(any(("." + n).endswith(p) for p in parents) for n in qnames(m)))
        rule(f"dns.query; dataset:isset,parents,type string,load {paths['parents']};", lambda m: False)
        rule(f"dns.query; to_md5; dataset:isset,md5s,type md5,load {paths['md5s']};",
             lambda m: any(n in md5s for n in qnames(m)))
        rule(f"dns.query; datarep:reps, >, 150, type string, load {paths['reps']};",
             lambda m: any(reps.get(n, -1) > 150 for n in qnames(m)))
        rule(f"dns.query; datarep:reps, <, 150, type string, load {paths['reps']};",
             lambda m: any(0 <= reps.get(n, -1) < 150 for n in qnames(m)))
        rule(f'dns.query; content:"mail"; dataset:isset,names,type string,load {paths["names"]};',
             lambda m: any("mail" in n and n in held for n in qnames(m)))
        rule(f"dns.query; dataset:isset,jnames,type string,load {paths['ndjson']},format ndjson,value_key ioc.name,"
             "context_key ioc;", lambda m: any(n in held for n in qnames(m)))
        rule(f"dns.query; to_md5; dataset:isset,jmd5s,type md5,load {paths['json']},format json,array_key list,"
             "value_key h,context_key h,remove_key;", lambda m: any(n in md5s for n in qnames(m)))
        # ip.src / ip.dst beside the transaction's buffers: the sender and the receiver of the
        # message inspected (Suricata's packet buffers, read on the packet that carries it); a
        # client address set (type ip: IPv4 addresses as 4 bytes and 12 zeros).
        rule(f'dns.query; content:"mail"; ip.src; dataset:isset,clients,type ip,load {paths["clients"]};',
             lambda m: m["client"] in CLIENTS_HELD and any("mail" in n for n in qnames(m)))
        rule('flow:to_client; dns.rcode:!0; ip.dst; content:"|0a 00 00 02|";',
             lambda m: not m["request"] and m["rcode"] != 0 and m["client"] == "10.0.0.2")
        rule(f"ip.src; dataset:isnotset,clients,type ip,load {paths['clients']}; dns.query; content:\"www\";",
             lambda m: m["request"] and m["client"] not in CLIENTS_HELD and any("www" in n for n in qnames(m)))
    # Only the packet's buffers: a packet signature on every packet of a DNS flow (each message one
    # packet here), as Suricata makes a signature without a transaction buffer.
    rule('ip.src; content:"|0a 00 00 35|"; endswith;', lambda m: not m["request"])
    rule('ip.dst; content:"|0a 00 00 03|";', lambda m: m["request"] and m["client"] == "10.0.0.3")
    return rules, want


def main():
    gaspp = sys.argv[1]
    paths = sys.argv[2:] or ["cpu", "cpu-device"]
    rng = random.Random(20261129)
    pk, msgs = build(rng)
    import tempfile
    dsdir = tempfile.TemporaryDirectory()
    rules, want = rules_for(rng, msgs, dataset_files(rng, msgs, dsdir.name))

    def loaded(path, err):
        if "dns.rules:" in err:  # a rule that did not load
            print(f"FAIL {path}: rules not loaded: {err.strip()[-400:]}")
            return 1
        return 0

    return 1 if check_counts(gaspp, paths, pk, rules, want, "dns", ",packet-alert-max=1000,datasets-allow-absolute=yes", loaded) else 0


if __name__ == "__main__":
    sys.exit(main())
