"""The scenario the congestion-control scenario tests share: two senders WRITE 512 KiB each into
one receiver through one switch, MTU 1024 (each test appends its [congestion_control] tables)."""

TWO_SENDER_INCAST = """
[topology]
kind = "incast"
n_senders = 2
[link]
mtu = 1024
[qp]
mtu = 1024
[traffic.incast]
receiver = "h2"
senders = ["h0", "h1"]
size = "512KiB"
"""
