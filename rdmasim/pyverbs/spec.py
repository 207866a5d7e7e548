"""``pyverbs.spec``: flow specifications (``struct ibv_flow_spec_*``) for ``pyverbs.flow``.

They hold the values given; a flow built from them cannot be created on the emulated device
(no flow steering, as on rxe: ``pyverbs.flow.Flow`` is EOPNOTSUPP).
"""

from __future__ import annotations

from rdmasim.pyverbs._attrs import attr_class

__all__ = ["EthSpec", "Ipv4ExtSpec", "Ipv6Spec", "TcpUdpSpec"]

_MASKED = ("dst_mac", "src_mac", "ether_type", "vlan_tag")
EthSpec = attr_class("EthSpec", __name__, "``ibv_flow_spec_eth``.",
                     [f for n in _MASKED for f in ((n, None), (n + "_mask", None))] + [("is_inner", 0)])
Ipv4ExtSpec = attr_class("Ipv4ExtSpec", __name__, "``ibv_flow_spec_ipv4_ext``.",
                         [f for n in ("dst_ip", "src_ip", "proto", "tos", "ttl", "flags")
                          for f in ((n, None), (n + "_mask", None))] + [("is_inner", False)])
TcpUdpSpec = attr_class("TcpUdpSpec", __name__, "``ibv_flow_spec_tcp_udp`` (``spec_type``: "
                        "``IBV_FLOW_SPEC_TCP`` or ``IBV_FLOW_SPEC_UDP``).",
                        [("spec_type", None)] + [f for n in ("dst_port", "src_port")
                                                 for f in ((n, None), (n + "_mask", None))]
                        + [("is_inner", False)])
Ipv6Spec = attr_class("Ipv6Spec", __name__, "``ibv_flow_spec_ipv6``.",
                      [f for n in ("dst_ip", "src_ip", "flow_label", "next_hdr", "traffic_class", "hop_limit")
                       for f in ((n, None), (n + "_mask", None))] + [("is_inner", False)])
