"""UET READ against WRITE on two hosts, and sprayed READs over a lossy leaf-spine (docs/uet.md, READ)."""

import rdmasim
from rdmasim import topology

for verb in ("WRITE", "READ"):
    t = topology.back_to_back(rate="100Gbps", delay="1us", mtu=4096)
    fs = t.sim.add_flows({"src": [0], "dst": [1], "size": [1 << 20], "verb": [verb]}, transport="uet")
    t.sim.run_flows()
    r = fs.results()
    print(verb, "fct_us", int(r["fct_ps"][0]) / 1e6, "bytes", int(r["bytes_delivered"][0]))
topo = rdmasim.leaf_spine(4, 4, 4, seed=3, switch_config={"path_select": "ecmp", "ecmp_seed": 3})
spines = {s.name for s in topo.spines}
for link in topo.sim.links:
    if {link.a.name, link.b.name} & spines:
        for end in (link.a, link.b):
            link.direction(end).set_loss(0.005)
src = [h.name for row in topo.hosts_by_leaf for h in row]
dst = [h.name for row in topo.hosts_by_leaf[1:] + topo.hosts_by_leaf[:1] for h in row]
n = len(src)
fs = topo.sim.add_flows({"src": src, "dst": dst, "size": [256 * 1024] * n, "verb": ["READ"] * n},
                        transport="uet", uet={"rto": "30us"})
topo.sim.run_flows()
r = fs.results()
print("sprayed READs with 0.5% loss: ok", sum(int(s) == 0 for s in r["status"]), "of", n,
      "bytes all", bool((r["bytes_delivered"] == 256 * 1024).all()), "retx", int(r["retx_pkts"].sum()),
      "max fct_us", int(r["fct_ps"].max()) / 1e6)
