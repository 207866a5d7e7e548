"""The rest of pyverbs' surface that rdma-core 59's test files import: the modules ``spec``,
``flow``, ``wq``, ``fork`` and ``cmid``; every enum of its ``.pxd`` files with the headers'
values; the ``pyverbs.device`` helpers; rxe's ``device_cap_flags``; QP depth limits as rxe."""

from __future__ import annotations

import errno
import importlib

import pytest

from rdmasim.errors import PyverbsRDMAError
from rdmasim.pyverbs import _enum_values
from rdmasim.pyverbs import libibverbs_enums as e
from rdmasim.pyverbs.cq import CQ
from rdmasim.pyverbs.device import Context
from rdmasim.pyverbs.mr import MR
from rdmasim.pyverbs.pd import PD
from rdmasim.pyverbs.qp import QP, QPCap, QPInitAttr
from rdmasim.pyverbs.wr import SGE, RecvWR, SendWR
from rdmasim.verbs import connect_qps


@pytest.mark.parametrize(("module", "table"), [
    ("libibverbs_enums", "VERBS"), ("librdmacm_enums", "RDMACM"),
    ("providers.mlx5.mlx5_enums", "MLX5"), ("providers.efa.efa_enums", "EFA")])
def test_every_enum_of_rdma_core_59_with_the_headers_values(module: str, table: str) -> None:
    mod = importlib.import_module(f"rdmasim.pyverbs.{module}")
    wrong = []
    for ename, visible, members in getattr(_enum_values, table):
        if not visible:
            continue
        cls = getattr(mod, ename) if ename else None
        for name, value in members:
            if getattr(mod, name, None) != value:
                wrong.append(f"{name}={getattr(mod, name, 'missing')} (header: {value})")
            if cls is not None and getattr(cls, name, None) != value:
                wrong.append(f"{ename}.{name}")
    wrong += [f"{n} (alias)" for n, v in getattr(_enum_values, table + "_ALIASES")
              if getattr(mod, n, None) != v]
    assert not wrong, f"rdmasim.pyverbs.{module}: {wrong[:20]}"


def test_named_enums_the_issue_lists() -> None:
    assert e.ibv_rate.IBV_RATE_100_GBPS == e.IBV_RATE_100_GBPS == 16  # verbs.h
    assert e.ibv_mig_state.IBV_MIG_ARMED == 2
    assert e.ibv_create_cq_wc_flags.IBV_WC_EX_WITH_CVLAN == 1 << 8
    assert e.ibv_fork_status.IBV_FORK_UNNEEDED == 2
    assert e._IBV_ALLOCATOR_USE_DEFAULT == (1 << 64) - 1  # (void *)-1 as pyverbs' size_t
    # the emulated values stay those of rdmasim's C table
    assert e.ibv_wc_opcode.IBV_WC_RECV == 128 and e.ibv_wc_opcode.IBV_WC_TM_RECV == 133


def test_device_helpers_of_pyverbs_device() -> None:
    import rdmasim.pyverbs.device as d

    assert d.translate_node_type(1) == "CA" and d.translate_node_type(9) == "Unknown"
    assert d.translate_transport_type(0) == "IB" and d.translate_transport_type(7) == "Unknown"
    assert d.translate_gid_type(2) == "RoCEv2" and d.translate_gid_type(9) == "Unknown gid_type (9)"
    assert d.guid_to_hex(0x1234ABCD) == "1234abcd"
    assert d.guid_format(0x0102030405060708) == "0807:0605:0403:0201"  # big-endian bytes as printed
    assert d.port_state_to_str(4) == "Active (4)" and d.port_state_to_str(9) == "Invalid state (9)"
    assert d.translate_event_type(e.IBV_EVENT_PORT_ACTIVE) == "IBV_EVENT_PORT_ACTIVE"
    assert d.translate_event_type(99) == "Unknown event_type (99)"
    caps = d.translate_device_caps(e.IBV_DEVICE_SRQ_RESIZE | e.IBV_DEVICE_BAD_PKEY_CNTR)
    assert caps.split() == ["IBV_DEVICE_BAD_PKEY_CNTR", "IBV_DEVICE_SRQ_RESIZE"]
    assert d.translate_port_cap_flags(e.IBV_PORT_CM_SUP).split() == ["IBV_PORT_CM_SUP"]
    assert d.translate_port_cap_flags2(0).split() == []
    assert d.str_from_flags(3, {1: "A", 2: "B", 4: "C"}) == "\n  A\n  B\n  "
    assert [x.name for x in d.rdma_get_devices()] == [x.name for x in d.get_device_list()]


def test_device_cap_flags_are_rxes() -> None:
    flags = Context(name="rxe0").query_device().device_cap_flags
    for bit in ("BAD_PKEY_CNTR", "BAD_QKEY_CNTR", "AUTO_PATH_MIG", "CHANGE_PHY_PORT", "UD_AV_PORT_ENFORCE",
                "PORT_ACTIVE_EVENT", "MEM_MGT_EXTENSIONS", "SYS_IMAGE_GUID", "RC_RNR_NAK_GEN", "SRQ_RESIZE",
                "MEM_WINDOW", "MEM_WINDOW_TYPE_2B"):
        assert flags & getattr(e, "IBV_DEVICE_" + bit), bit
    assert not flags & e.IBV_DEVICE_XRC and not flags & e.IBV_DEVICE_MANAGED_FLOW_STEERING


def _rc(pd: PD, cq: CQ, cap: QPCap) -> QP:
    return QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))


def test_qp_depth_zero_is_allowed_and_every_post_finds_the_queue_full() -> None:
    ctx = Context(name="rxe0")
    pd, cq = PD(ctx), CQ(ctx, 16)
    mr = MR(pd, 64, e.IBV_ACCESS_LOCAL_WRITE)
    qp = _rc(pd, cq, QPCap(max_send_wr=0, max_recv_wr=0))
    peer = _rc(pd, cq, QPCap(max_send_wr=1, max_recv_wr=1))
    assert (qp.query(e.IBV_QP_CAP)[1].cap.max_send_wr, qp.query(e.IBV_QP_CAP)[1].cap.max_recv_wr) == (0, 0)
    connect_qps(qp, peer)
    for post, wr in ((qp.post_send, SendWR(opcode=e.IBV_WR_SEND, sg=[SGE(mr.buf, 8, mr.lkey)])),
                     (qp.post_recv, RecvWR(sg=[SGE(mr.buf, 8, mr.lkey)]))):
        with pytest.raises(PyverbsRDMAError) as exc:
            post(wr)
        assert exc.value.error_code == errno.ENOMEM  # rxe: a queue of 0 entries is always full


@pytest.mark.parametrize("field", ["max_send_wr", "max_recv_wr"])
def test_qp_depth_above_the_devices_max_qp_wr_is_refused(field: str) -> None:
    ctx = Context(name="rxe0")
    pd, cq = PD(ctx), CQ(ctx, 16)
    top = ctx.query_device().max_qp_wr
    _rc(pd, cq, QPCap(**{field: top}))  # the maximum itself is fine
    with pytest.raises(PyverbsRDMAError, match=f"{field}={top + 1}") as exc:
        _rc(pd, cq, QPCap(**{field: top + 1}))
    assert exc.value.error_code == errno.EINVAL


def test_fork_module_says_fork_needs_no_setup() -> None:
    from rdmasim.pyverbs.fork import fork_init, is_fork_initialized

    fork_init()  # nothing to set up: the emulated device's memory is the process's own
    assert is_fork_initialized() == e.IBV_FORK_UNNEEDED


def test_flow_wq_and_parent_domain_are_eopnotsupp_as_on_rxe() -> None:
    from rdmasim.pyverbs.flow import Flow, FlowAttr
    from rdmasim.pyverbs.pd import ParentDomain, ParentDomainInitAttr
    from rdmasim.pyverbs.spec import EthSpec, Ipv4ExtSpec, Ipv6Spec, TcpUdpSpec
    from rdmasim.pyverbs.wq import WQ, RwqIndTable, RwqIndTableInitAttr, RxHashConf, WQAttr, WQInitAttr

    ctx = Context(name="rxe0")
    pd, cq = PD(ctx), CQ(ctx, 4)
    attr = FlowAttr(num_of_specs=1, port=1)
    assert (attr.num_of_specs, attr.port, attr.priority) == (1, 1, 0)
    spec = EthSpec(ether_type=0x800)
    assert spec.ether_type == 0x800 and spec.dst_mac is None
    assert Ipv4ExtSpec(proto=6).proto == 6 and Ipv6Spec(hop_limit=3).hop_limit == 3
    assert TcpUdpSpec(e.IBV_FLOW_SPEC_TCP, dst_port=80).spec_type == e.IBV_FLOW_SPEC_TCP
    with pytest.raises(TypeError):
        EthSpec(no_such_field=1)
    qp = _rc(pd, cq, QPCap())
    winit = WQInitAttr(wq_pd=pd, wq_cq=cq)
    assert winit.max_wr == 100 and WQAttr().wq_state == 0 and RxHashConf().rx_hash_key_len == 0
    for make in (lambda: Flow(qp, attr), lambda: WQ(ctx, winit),
                 lambda: RwqIndTable(ctx, RwqIndTableInitAttr()),
                 lambda: ParentDomain(ctx, ParentDomainInitAttr(pd=pd))):
        with pytest.raises(PyverbsRDMAError) as exc:
            make()
        assert exc.value.error_code == errno.EOPNOTSUPP


def test_cmid_loads_and_says_what_it_lacks() -> None:
    from rdmasim.pyverbs import cmid
    from rdmasim.pyverbs import librdmacm_enums as ce

    param = cmid.ConnParam(resources=2, retry=3)
    assert (param.resources, param.retry, param.rnr_retry) == (2, 3, 5)
    assert ce.RDMA_CM_EVENT_ESTABLISHED == 9 and ce.RAI_PASSIVE == 1
    passive = cmid.AddrInfo(src="10.0.0.1", src_service="7471", flags=ce.RAI_PASSIVE)
    for make in (lambda: cmid.CMEventChannel(), lambda: cmid.CMID(creator=passive)):
        with pytest.raises(PyverbsRDMAError) as exc:  # in one process: nobody to connect to
            make()
        assert exc.value.error_code == errno.EOPNOTSUPP
        assert "rdma_cm" in str(exc.value) and "rdmasim exec" in str(exc.value)


def test_srq_ops_wr_exists() -> None:
    from rdmasim.pyverbs.srq import OpsWr

    assert OpsWr(wr_id=3).wr_id == 3



def test_query_rt_values_ex_is_eopnotsupp_as_on_rxe() -> None:
    # rxe's provider has no query_rt_values: libibverbs answers EOPNOTSUPP
    with pytest.raises(PyverbsRDMAError) as exc:
        Context(name="rxe0").query_rt_values_ex()
    assert exc.value.error_code == errno.EOPNOTSUPP
