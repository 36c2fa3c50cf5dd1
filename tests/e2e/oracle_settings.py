"""gaspp settings that match the flow semantics of oracles without flow expiry.

ndpiReader reading a capture file and tshark's "follow tcp stream" never end a connection for being
idle: one flow spans a 40 s pause (ndpi/dns.pcap, UDP) or 600 s (ndpi/jabber.pcap, TCP). gaspp's
defaults are Suricata's flow-timeouts (30-600 s), which split such flows; against these oracles
gaspp runs with every timeout at its largest value (4294967295 s, 136 years) instead.
"""

NO_IDLE_EXPIRY = [arg for proto in ("tcp", "udp", "icmp", "default")
                  for state in ("new", "established", "closed", "emergency-new", "emergency-established",
                                "emergency-closed")
                  for arg in ("--set", f"flow-timeouts.{proto}.{state}=4294967295")]
