"""UET receiver-credit congestion control (csrc/uet/rccc.c through rdmasim._core.RcccForTest and
rccc_incast): the receiver's credit pacer (link rate x 0.99, 4-MSS quanta, round robin) and the
sender's credit accounting (speculation, cumulative grants), as UEC htsim models them."""

from __future__ import annotations

import pytest

from rdmasim import _core

LINE = 100e9
MSS = 4096


def rx(**kw) -> _core.RcccForTest:
    p = _core.rccc_rx_default_params(LINE, MSS)
    p.update(kw)
    return _core.RcccForTest(p)


def quantum_time(nbytes: int, rate: float = LINE * 0.99) -> int:
    return round(nbytes * 8e12 / rate)


def test_defaults_are_htsims():
    p = _core.rccc_rx_default_params(LINE, MSS)
    assert p == dict(link_bps=LINE, rate_modifier=0.99, quantum=4 * MSS)


def test_pacer_grants_quanta_at_the_credit_rate_up_to_the_request():
    r = rx()
    assert r.next_ps() == 0                      # idle
    r.request(0, 7, MSS)
    assert r.next_ps() == 1                      # 0 means idle: a request at time 0 waits 1 ps
    r.remove(7)
    assert r.next_ps() == 0
    r.request(1000, 5, 10 * MSS)
    assert r.next_ps() == 1000
    assert r.pull(999) is None
    assert r.pull(1000) == (5, 4 * MSS)
    assert r.next_ps() == 1000 + quantum_time(4 * MSS)
    assert r.pull(r.next_ps()) == (5, 8 * MSS)
    t = r.next_ps()
    assert r.pull(t) == (5, 10 * MSS)            # the last grant: only what was asked
    assert r.next_ps() == 0 and r.granted(5) == 10 * MSS
    # a new request waits until the link time of the last grant has passed
    r.request(t + 10, 5, 11 * MSS)
    assert r.next_ps() == t + quantum_time(2 * MSS)


def test_round_robin_gives_each_waiting_sender_a_fair_share():
    r = rx()
    for k in (1, 2, 3):
        r.request(0, k, 1 << 30)
    order = []
    for _ in range(9):
        key, _g = r.pull(r.next_ps())
        order.append(key)
    assert order == [1, 2, 3] * 3
    assert r.granted(1) == r.granted(2) == r.granted(3) == 3 * 4 * MSS


def test_requests_are_cumulative_an_older_one_changes_nothing():
    r = rx()
    r.request(0, 1, 8 * MSS)
    r.request(0, 1, 4 * MSS)                     # reordered, older
    r.pull(r.next_ps())
    r.pull(r.next_ps())
    assert r.granted(1) == 8 * MSS and r.next_ps() == 0


def test_table_full_refuses_and_remove_frees():
    r = rx()
    for k in range(64):
        assert r.request(0, k, 0) == 0
    assert r.request(0, 99, MSS) == -1 and r.rx_state["refused"] == 1
    r.remove(3)
    assert r.request(0, 99, MSS) == 0


def test_bad_receiver_parameters_name_the_field():
    for kw, idx in ((dict(link_bps=0.0), 1), (dict(rate_modifier=1.5), 2), (dict(quantum=0), 3)):
        with pytest.raises(ValueError, match=f"parameter {idx}"):
            rx(**kw)


def test_sender_speculates_then_spends_only_credit():
    r = rx()
    r.tx_init(0, 3 * MSS, 100 * MSS, MSS)
    sent = 0
    while r.tx_may_send(0):
        r.tx_sent(0, MSS)
        sent += 1
    assert sent == 3                             # the speculative allowance
    r.tx_feedback(0)                             # the first ACK ends speculation
    assert not r.tx_may_send(0)
    r.tx_credit(0, 2 * MSS)
    assert r.tx_may_send(0)
    r.tx_credit(0, MSS)                          # an older cumulative grant: nothing
    assert r.tx_state(0)["credit"] == 2 * MSS and r.tx_state(0)["credit_received"] == 2 * MSS


def test_speculation_ends_dropping_unused_credit():
    r = rx()
    r.tx_init(0, 10 * MSS, 0, MSS)
    r.tx_sent(0, MSS)
    r.tx_credit(0, MSS)                          # first feedback: 9 unused MSS dropped, then + 1
    assert r.tx_state(0)["credit"] == MSS and r.tx_state(0)["speculating"] == 0


def test_sender_request_is_backlog_minus_credit_shared_and_capped():
    r = rx()
    r.tx_init(0, 0, 20 * MSS, MSS)
    r.tx_feedback(0)
    assert r.tx_request(0, 100 * MSS) == 20 * MSS          # capped at max_credit
    r.tx_credit(0, 20 * MSS)
    for _ in range(15):
        r.tx_sent(0, MSS)                                   # 5 MSS of credit left
    assert r.tx_request(0, 30 * MSS) == 20 * MSS + 15 * MSS  # cumulative: grant seen + (20 - 5 held)
    assert r.tx_request(0, 10 * MSS) == 35 * MSS           # never goes back
    r.tx_init(1, 0, 0, MSS)
    r.tx_feedback(1)
    assert r.tx_request(1, 10 * MSS, 2) == 5 * MSS         # shared by the NIC's 2 active senders
    r.tx_init(2, 4 * MSS, 0, MSS)
    assert r.tx_request(2, 2 * MSS) == MSS                 # speculating: at least one MTU


@pytest.mark.parametrize("n", [2, 5])
def test_incast_credit_is_shared_fairly_at_the_receivers_rate(n):
    per, st = _core.rccc_incast(_core.rccc_rx_default_params(LINE, MSS), n, 2_000 * MSS, MSS, 1_000_000,
                                40 * MSS, 40 * MSS, 10**12)
    sent = [p["sent"] for p in per]
    assert sent == [2_000 * MSS] * n
    # credit was granted at 0.99 of the link: the whole transfer minus the speculative bytes
    # takes n x 2000 MSS of credit at that rate, within one RTT and a quantum per sender
    end = max(p["last_send_ps"] for p in per)
    ideal = quantum_time(n * 2_000 * MSS - n * 40 * MSS)
    assert ideal <= end <= ideal + 2_000_000 + n * quantum_time(4 * MSS)
    got = [p["credit_received"] for p in per]
    assert max(got) - min(got) <= 4 * MSS
