"""rdmasim.pyverbs: pyverbs' module layout, the emulated rxe devices, and running an unmodified
pyverbs program (``rdmasim pyverbs-run``, ``rdmasim.pyverbs.install()``)."""

from __future__ import annotations

import errno
import importlib
import importlib.util
import ipaddress
import os
import subprocess
import sys
from pathlib import Path

import pytest

import rdmasim
import rdmasim.pyverbs as rp
from rdmasim.errors import PyverbsRDMAError, PyverbsUserError

HERE = Path(__file__).parent
ROOT = HERE.parent.parent
PROGRAM = HERE / "write_program.py"

# rdma-core v59 pyverbs module -> what a program imports from it
MODULES = {
    "device": ["Context", "get_device_list"],
    "pd": ["PD"],
    "mr": ["MR", "MW", "MWBindInfo"],
    "cq": ["CQ", "CompChannel", "WC", "CQEX", "CqInitAttrEx", "PollCqAttr"],
    "qp": ["QP", "QPAttr", "QPCap", "QPInitAttr", "QPInitAttrEx"],
    "wr": ["SGE", "SendWR", "RecvWR"],
    "addr": ["AHAttr", "GlobalRoute", "AH", "GID"],
    "srq": [],
    "pyverbs_error": ["PyverbsError", "PyverbsRDMAError", "PyverbsUserError"],
    "libibverbs_enums": ["ibv_qp_type", "ibv_wc_status", "ibv_access_flags", "ibv_wr_opcode"],
    "enums": ["IBV_QPT_RC"],
    "base": ["PyverbsObject", "PyverbsRDMAErrno"],
    "xrcd": ["XRCD", "XRCDInitAttr"],
    "cm_enums": ["RDMA_PS_UDP", "RDMA_PS_TCP"],
}

# Values of libibverbs' verbs.h (rdma-core), the ABI every provider and pyverbs share.
VERBS_H = {
    "IBV_QPT_RC": 2, "IBV_QPT_UC": 3, "IBV_QPT_UD": 4,
    "IBV_QPS_RESET": 0, "IBV_QPS_INIT": 1, "IBV_QPS_RTR": 2, "IBV_QPS_RTS": 3, "IBV_QPS_ERR": 6,
    "IBV_WC_SUCCESS": 0, "IBV_WC_REM_ACCESS_ERR": 10, "IBV_WC_RETRY_EXC_ERR": 12,
    "IBV_WC_RNR_RETRY_EXC_ERR": 13, "IBV_WC_WR_FLUSH_ERR": 5,
    "IBV_WR_RDMA_WRITE": 0, "IBV_WR_RDMA_WRITE_WITH_IMM": 1, "IBV_WR_SEND": 2, "IBV_WR_RDMA_READ": 4,
    "IBV_WR_ATOMIC_CMP_AND_SWP": 5, "IBV_WR_ATOMIC_FETCH_AND_ADD": 6,
    "IBV_ACCESS_LOCAL_WRITE": 1, "IBV_ACCESS_REMOTE_WRITE": 2, "IBV_ACCESS_REMOTE_READ": 4,
    "IBV_ACCESS_REMOTE_ATOMIC": 8, "IBV_SEND_SIGNALED": 2,
    "IBV_MTU_256": 1, "IBV_MTU_1024": 3, "IBV_MTU_4096": 5,
    "IBV_QP_STATE": 1, "IBV_QP_AV": 1 << 7, "IBV_QP_DEST_QPN": 1 << 20,
    "IBV_PORT_ACTIVE": 4, "IBV_LINK_LAYER_ETHERNET": 2, "IBV_GID_TYPE_SYSFS_ROCE_V2": 1,
    "IBV_WC_WITH_IMM": 2, "IBV_ATOMIC_HCA": 1,
    "IBV_QPT_RAW_PACKET": 8, "IBV_DEVICE_MEM_WINDOW": 1 << 17, "IBV_DEVICE_RC_RNR_NAK_GEN": 4096,
    "IBV_QP_INIT_ATTR_PD": 1, "IBV_QP_INIT_ATTR_CREATE_FLAGS": 4, "IBV_ODP_SUPPORT": 1,
    "IBV_WC_EX_WITH_BYTE_LEN": 1, "IBV_WC_STANDARD_FLAGS": 127, "_IBV_DEVICE_RAW_SCATTER_FCS": 1 << 34,
}
ENUM_CLASS = {"IBV_QPT_RC": "ibv_qp_type", "IBV_WC_SUCCESS": "ibv_wc_status",
              "IBV_WR_SEND": "ibv_wr_opcode", "IBV_ACCESS_REMOTE_WRITE": "ibv_access_flags",
              "IBV_QPS_RTS": "ibv_qp_state", "IBV_MTU_1024": "ibv_mtu", "IBV_QP_AV": "ibv_qp_attr_mask",
              "IBV_PORT_ACTIVE": "ibv_port_state", "IBV_LINK_LAYER_ETHERNET": "ibv_link_layer",
              "IBV_SEND_SIGNALED": "ibv_send_flags"}


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_paths(module: str) -> None:
    mod = importlib.import_module(f"rdmasim.pyverbs.{module}")
    for name in MODULES[module]:
        assert hasattr(mod, name), f"rdmasim.pyverbs.{module} lacks {name}"


@pytest.mark.parametrize("name", sorted(VERBS_H))
def test_enum_values_are_rdma_cores(name: str) -> None:
    from rdmasim.pyverbs import enums, libibverbs_enums

    assert int(getattr(libibverbs_enums, name)) == VERBS_H[name]
    assert int(getattr(enums, name)) == VERBS_H[name]
    if name in ENUM_CLASS:
        cls = getattr(libibverbs_enums, ENUM_CLASS[name])
        assert cls[name] == VERBS_H[name] and cls[name] is getattr(libibverbs_enums, name)


def _run(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], env=_env(), cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def _real_pyverbs_installed(cwd: Path) -> bool:
    # checked in a fresh process: under pytest, tests/ is on sys.path and tests/pyverbs looks
    # like a namespace package named pyverbs
    return _run("import importlib.util; print(importlib.util.find_spec('pyverbs') is None)",
                cwd).stdout.strip() != "True"


def test_nothing_named_pyverbs_without_asking(tmp_path: Path) -> None:
    if _real_pyverbs_installed(tmp_path):
        pytest.skip("a real pyverbs is installed here")
    r = _run("import rdmasim.pyverbs, rdmasim.verbs\nimport pyverbs\n", tmp_path)
    assert r.returncode != 0 and "ModuleNotFoundError" in r.stderr


def test_install_maps_pyverbs_modules(tmp_path: Path) -> None:
    code = ("import rdmasim.pyverbs as rp\nrp.install()\n"
            "import pyverbs.device, pyverbs.libibverbs_enums as e\nfrom pyverbs.qp import QPInitAttr\n"
            "import rdmasim.pyverbs.device as d\n"
            "assert pyverbs.device.Context is d.Context\n"
            "assert e.ibv_qp_type.IBV_QPT_RC == e.IBV_QPT_RC == 2\n"
            "print(QPInitAttr().qp_type, [x.name.decode() for x in pyverbs.device.get_device_list()])\n"
            "rp.uninstall()\n"
            "import importlib.util; print(importlib.util.find_spec('pyverbs') is None)\n")
    r = _run(code, tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "4 ['rxe0', 'rxe1']"  # UD: pyverbs' default qp_type
    if not _real_pyverbs_installed(tmp_path):
        assert lines[1] == "True"


def test_pyverbs_run_runs_an_unmodified_program() -> None:
    r = subprocess.run([sys.executable, "-m", "rdmasim.cli", "pyverbs-run", str(PROGRAM), "--flag", "v"],
                       env=_env(), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "rxe0 -> rxe1 hello from rxe0 wr_id 1 --flag v"


def test_pyverbs_run_reports_program_exit_status_and_missing_file(tmp_path: Path) -> None:
    prog = tmp_path / "exit3.py"
    prog.write_text("import sys\nimport pyverbs.device\nsys.exit(3)\n")
    r = subprocess.run([sys.executable, "-m", "rdmasim.cli", "pyverbs-run", str(prog)],
                       env=_env(), capture_output=True, text=True, timeout=120)
    assert r.returncode == 3, r.stderr
    r = subprocess.run([sys.executable, "-m", "rdmasim.cli", "pyverbs-run", str(tmp_path / "nope.py")],
                       env=_env(), capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "nope.py" in r.stderr


def test_default_devices_and_queries() -> None:
    from rdmasim.pyverbs import libibverbs_enums as e
    from rdmasim.pyverbs._devices import RXE_DEVICE_ATTR
    from rdmasim.pyverbs.device import Context, get_device_list

    devs = get_device_list()
    assert [d.name for d in devs] == [b"rxe0", b"rxe1"]
    sim = rp.simulation()
    hosts = list(sim.hosts.values())
    for dev, host in zip(devs, hosts, strict=True):
        with Context(name=dev.name) as ctx:
            assert ctx.host is host
            attr = ctx.query_device()
            # Linux rxe's rxe_param.h
            assert (attr.max_qp, attr.max_qp_wr, attr.max_sge, attr.max_cqe, attr.max_mr,
                    attr.max_qp_rd_atom, attr.max_pd, attr.phys_port_cnt) == \
                   (0x10000, 0x4000, 32, 32767, 256 * 1024, 128, 0x7FFC, 1)
            assert attr.max_srq == RXE_DEVICE_ATTR["max_srq"] == 960
            assert attr.node_guid == dev.guid
            ex = ctx.query_device_ex()
            # ODP as rxe has it
            assert ex.orig_attr == attr and ex.odp_caps.general_caps == 1 and ex.tso_caps.max_tso == 0
            assert attr.device_cap_flags & e.IBV_DEVICE_RC_RNR_NAK_GEN
            # rxe_param.h: RXE_MAX_MW, IB_DEVICE_MEM_WINDOW | IB_DEVICE_MEM_WINDOW_TYPE_2B
            assert attr.max_mw == 0x1000
            assert attr.device_cap_flags & e.IBV_DEVICE_MEM_WINDOW
            assert attr.device_cap_flags & e.IBV_DEVICE_MEM_WINDOW_TYPE_2B
            port = ctx.query_port(1)
            assert port.state == e.IBV_PORT_ACTIVE and port.link_layer == e.IBV_LINK_LAYER_ETHERNET
            assert port.active_mtu == e.IBV_MTU_4096 and port.gid_tbl_len == 1024
            gid = ctx.query_gid(1, 0)
            mapped = ipaddress.IPv6Address(gid.gid).ipv4_mapped
            assert str(mapped) == host.ip
            assert ctx.query_gid_type(1, 0) == e.IBV_GID_TYPE_SYSFS_ROCE_V2
            with pytest.raises(PyverbsRDMAError) as exc:
                ctx.query_port(2)
            assert exc.value.error_code == errno.EINVAL
            with pytest.raises(PyverbsRDMAError):
                ctx.query_gid(1, 1024)
    with pytest.raises(PyverbsUserError, match=r"'mlx5_0'.*rxe0"):
        Context(name="mlx5_0")
    assert Context("rxe1").host is hosts[1]


def test_use_replaces_the_topology() -> None:
    from rdmasim.pyverbs import libibverbs_enums as e
    from rdmasim.pyverbs.device import Context, get_device_list

    topo = rdmasim.topology.star(3, mtu=1024)
    rp.use(topo)
    assert [d.name for d in get_device_list()] == [b"rxe0", b"rxe1", b"rxe2"]
    ctx = Context(name="rxe2")
    assert ctx.host is list(topo.sim.hosts.values())[2]
    assert ctx.query_port(1).active_mtu == e.IBV_MTU_1024
    with pytest.raises(PyverbsUserError):
        rp.use("not a simulation")


def _rc_pair(channel: bool = True) -> tuple:
    from rdmasim.pyverbs import enums as e
    from rdmasim.pyverbs.addr import AHAttr, GlobalRoute
    from rdmasim.pyverbs.cq import CQ, CompChannel
    from rdmasim.pyverbs.device import Context
    from rdmasim.pyverbs.mr import MR
    from rdmasim.pyverbs.pd import PD
    from rdmasim.pyverbs.qp import QP, QPAttr, QPCap, QPInitAttrEx

    ctx, pctx = Context(name="rxe0"), Context(name="rxe1")
    pd, ppd = PD(ctx), PD(pctx)
    ch = CompChannel(ctx) if channel else None
    cq, pcq = CQ(ctx, 8, None, ch), CQ(pctx, 8)
    qp = QP(ctx, QPInitAttrEx(qp_type=e.IBV_QPT_RC, pd=pd, scq=cq, rcq=cq, cap=QPCap(max_send_wr=4)))
    pqp = QP(ppd, QPInitAttrEx(qp_type=e.IBV_QPT_RC, scq=pcq, rcq=pcq))
    for me, other, gid in ((qp, pqp, pctx.query_gid(1, 0)), (pqp, qp, ctx.query_gid(1, 0))):
        a = QPAttr(qp_access_flags=e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE,
                   path_mtu=e.IBV_MTU_1024, dest_qp_num=other.qp_num)
        a.ah_attr = AHAttr(gr=GlobalRoute(dgid=gid))
        assert a.ah_attr.is_global == 1
        me.to_init(a)
        me.to_rtr(a)
        me.to_rts(a)
    mr = MR(pd, 64, e.IBV_ACCESS_LOCAL_WRITE)
    pmr = MR(ppd, 64, e.IBV_ACCESS_LOCAL_WRITE)
    return ch, cq, qp, mr, pmr


def _write(qp, mr, pmr) -> None:  # noqa: ANN001
    from rdmasim.pyverbs import enums as e
    from rdmasim.pyverbs.wr import SGE, SendWR

    wr = SendWR(wr_id=7, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(mr.buf, 8, mr.lkey)])
    wr.set_wr_rdma(pmr.rkey, pmr.buf)
    qp.post_send(wr, None)


def test_completion_channel_events() -> None:
    from rdmasim.pyverbs import enums as e

    ch, cq, qp, mr, pmr = _rc_pair()
    with pytest.raises(PyverbsUserError, match="not armed"):
        ch.get_cq_event(cq)
    cq.req_notify()
    with pytest.raises(PyverbsRDMAError) as exc:  # nothing posted: no event can ever come
        ch.get_cq_event(cq)
    assert exc.value.error_code == errno.EIO
    # the target MR lacks remote write: the WRITE completes with an error, and that is an event
    pmr.rereg(4, access=e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)  # CHANGE_ACCESS
    assert pmr.rkey != 0
    mr.write("abcdefgh", 8)
    cq.req_notify()
    _write(qp, mr, pmr)
    assert len(cq) == 0
    ch.get_cq_event(cq)
    cq.ack_events(1)
    with pytest.raises(PyverbsUserError):
        cq.ack_events(1)
    n, wcs = cq.poll()
    assert n == 1 and wcs[0].status == e.IBV_WC_SUCCESS and wcs[0].wr_id == 7
    assert pmr.read(8, 0) == b"abcdefgh"


def test_post_send_fills_a_sendwr_bad_wr() -> None:
    from rdmasim.pyverbs import enums as e
    from rdmasim.pyverbs.wr import SGE, SendWR

    _, _, qp, mr, _ = _rc_pair(channel=False)
    good = SendWR(wr_id=1, opcode=e.IBV_WR_SEND, sg=[SGE(mr.buf, 8, mr.lkey)])
    bad = SendWR(wr_id=2, opcode=e.IBV_WR_SEND, sg=[SGE(mr.buf, 8, mr.lkey)] * 40)  # > max_sge
    good.next_wr = bad
    out = SendWR()
    with pytest.raises(PyverbsRDMAError, match="num_sge=40"):
        qp.post_send(good, out)
    assert out.wr_id == 2 and out.num_sge == 40


def test_cqex_polls_completions_one_by_one() -> None:
    from rdmasim.pyverbs import enums as e
    from rdmasim.pyverbs.addr import AHAttr, GlobalRoute
    from rdmasim.pyverbs.cq import CQ, CQEX, CqInitAttrEx, PollCqAttr
    from rdmasim.pyverbs.device import Context
    from rdmasim.pyverbs.mr import MR
    from rdmasim.pyverbs.pd import PD
    from rdmasim.pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
    from rdmasim.pyverbs.wr import SGE, SendWR

    ctx, pctx = Context(name="rxe0"), Context(name="rxe1")
    with pytest.raises(PyverbsRDMAError) as exc:
        CQEX(ctx, CqInitAttrEx(wc_flags=e.IBV_WC_EX_WITH_COMPLETION_TIMESTAMP))
    assert exc.value.error_code == errno.EOPNOTSUPP
    cqex = CQEX(ctx, CqInitAttrEx(cqe=8, wc_flags=e.IBV_WC_STANDARD_FLAGS))
    pcq = CQ(pctx, 8)
    pd, ppd = PD(ctx), PD(pctx)
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cqex, rcq=cqex, cap=QPCap(max_send_wr=4)))
    pqp = QP(ppd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=pcq, rcq=pcq))
    for me, other, c in ((qp, pqp, pctx), (pqp, qp, ctx)):
        a = QPAttr(qp_access_flags=e.IBV_ACCESS_REMOTE_WRITE, path_mtu=e.IBV_MTU_1024,
                   dest_qp_num=other.qp_num)
        a.ah_attr = AHAttr(gr=GlobalRoute(dgid=c.query_gid(1, 0)))
        me.to_init(a)
        me.to_rtr(a)
        me.to_rts(a)
    mr = MR(pd, 64, e.IBV_ACCESS_LOCAL_WRITE)
    pmr = MR(ppd, 64, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    attr = PollCqAttr()
    assert cqex.start_poll(attr) == errno.ENOENT
    cqex.end_poll()
    for i in (1, 2):
        wr = SendWR(wr_id=i, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(mr.buf, 8, mr.lkey)])
        wr.set_wr_rdma(pmr.rkey, pmr.buf)
        qp.post_send(wr)
    ctx.sim.run_until_idle()
    assert cqex.start_poll(attr) == 0
    assert (cqex.wr_id, cqex.status, cqex.read_opcode(), cqex.read_qp_num()) == \
        (1, e.IBV_WC_SUCCESS, e.IBV_WC_RDMA_WRITE, qp.qp_num)
    assert cqex.next_poll() == 0 and cqex.wr_id == 2
    assert cqex.next_poll() == errno.ENOENT
    cqex.end_poll()
    with pytest.raises(PyverbsUserError, match="no current completion"):
        cqex.read_opcode()


def test_cq_and_mr_limits() -> None:
    from rdmasim.pyverbs.cq import CQ
    from rdmasim.pyverbs.device import Context
    from rdmasim.pyverbs.mr import MR
    from rdmasim.pyverbs.pd import PD

    ctx = Context(name="rxe0")
    with pytest.raises(PyverbsRDMAError) as exc:
        CQ(ctx, 32768)  # rxe's max_cqe is 32767
    assert exc.value.error_code == errno.EINVAL
    cq = CQ(ctx, 32767)
    with pytest.raises(PyverbsRDMAError, match="no completion channel"):
        cq.req_notify()
    mr = MR(PD(ctx), 16, 1)
    with pytest.raises(PyverbsRDMAError) as exc:
        mr.rereg(1, length=16)  # IBV_REREG_MR_CHANGE_TRANSLATION
    assert exc.value.error_code == errno.EOPNOTSUPP
    with pytest.raises(PyverbsRDMAError, match="mem_alloc") as exc:  # not memory rdmasim allocated
        MR(PD(ctx), 16, 1, address=0x1000)
    assert exc.value.error_code == errno.EFAULT


def test_xrcd_is_unsupported_and_mw_types_as_on_rxe() -> None:
    from rdmasim.pyverbs.device import Context
    from rdmasim.pyverbs.mr import MW
    from rdmasim.pyverbs.pd import PD
    from rdmasim.pyverbs.xrcd import XRCD, XRCDInitAttr

    ctx = Context(name="rxe0")
    with pytest.raises(PyverbsRDMAError) as exc:
        XRCD(ctx, XRCDInitAttr())
    assert exc.value.error_code == errno.EOPNOTSUPP
    pd = PD(ctx)
    with MW(pd, 1) as mw1, MW(pd, 2) as mw2:  # rxe: type 1 and type 2B windows
        assert mw1.rkey != mw2.rkey
    with pytest.raises(PyverbsRDMAError, match="Failed to allocate MW") as exc:
        MW(pd, 3)
    assert exc.value.error_code == errno.EINVAL  # ib_uverbs_alloc_mw


def test_qp_init_attr_defaults_to_ud() -> None:
    from rdmasim.pyverbs import enums as e
    from rdmasim.pyverbs.qp import QPInitAttr, QPInitAttrEx

    assert QPInitAttr().qp_type == e.IBV_QPT_UD
    assert QPInitAttrEx().qp_type == e.IBV_QPT_UD
    with pytest.raises(PyverbsUserError, match="create_flags"):
        QPInitAttrEx(create_flags=1)
