#!/usr/bin/env python3
"""libqrdma's verbs semantics, through pyverbs, in the guest.

Run by tests/vm/provider-semantics.sh after qrdma_setup (lib-qrdma.sh):

    provider-semantics.py DEVICE GID_INDEX

Each test builds what it needs on one device (QPs talk to each other over
the device's loopback fabric) and checks what libqrdma returns: work
completions field by field, the errno of bad requests (S38), flushing in
ERR (S35), RESET and destroy dropping a QP's completions (S36, S12), the
extended CQ and QP APIs, SRQ, UD, resize, completion events.  Prints TAP.
"""

import errno
import signal
import socket
import sys
import time
import traceback

import pyverbs.enums as e
from pyverbs.addr import AH, AHAttr, GlobalRoute
from pyverbs.cq import CQ, CQEX, CompChannel, CqInitAttrEx, PollCqAttr
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QP, QPAttr, QPCap, QPEx, QPInitAttr, QPInitAttrEx
from pyverbs.srq import SRQ, SrqAttr, SrqInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR

DEV = sys.argv[1] if len(sys.argv) > 1 else 'qrdma0'
GID_INDEX = int(sys.argv[2]) if len(sys.argv) > 2 else 1
PORT = 1
QKEY = 0x11111111
ACCESS = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE |
          e.IBV_ACCESS_REMOTE_READ | e.IBV_ACCESS_REMOTE_ATOMIC)
MAX_SEND_SGE = 12
MAX_RECV_SGE = 7
MAX_INLINE = 192
GRH = 40


class Fail(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)


def expect_errno(code, fn, *args):
    """fn(*args) must fail with errno code."""
    try:
        fn(*args)
    except PyverbsRDMAError as ex:
        check(ex.error_code == code,
              f'expected {errno.errorcode[code]}, got {ex.error_code} ({ex})')
        return
    raise Fail(f'expected {errno.errorcode[code]}, it succeeded')


def poll(cq, n=1, timeout=10.0, ex=False):
    """n completions of cq (a CQ), or fail after timeout seconds."""
    wcs = []
    end = time.monotonic() + timeout
    while len(wcs) < n:
        _, got = cq.poll(n - len(wcs))
        wcs += got
        if len(wcs) < n and time.monotonic() > end:
            raise Fail(f'{len(wcs)} of {n} completions after {timeout} s: '
                       + ', '.join(f'{w.wr_id}/{w.status}' for w in wcs))
    return wcs


def poll_none(cq, wait=0.3):
    """No completion shows up in wait seconds."""
    time.sleep(wait)
    n, wcs = cq.poll(16)
    check(n == 0, f'unexpected completions: '
          + ', '.join(f'wr_id {w.wr_id} qp {w.qp_num:#x} status {w.status}'
                      for w in wcs))


def on_alarm(signum, frame):
    raise Fail('no completion event in 10 s')


def ok(wc, opcode=None, wr_id=None):
    check(wc.status == e.IBV_WC_SUCCESS,
          f'wr_id {wc.wr_id}: status {wc.status} vendor_err {wc.vendor_err}')
    if opcode is not None:
        check(wc.opcode == opcode, f'wr_id {wc.wr_id}: opcode {wc.opcode}, '
              f'want {opcode}')
    if wr_id is not None:
        check(wc.wr_id == wr_id, f'wr_id {wc.wr_id}, want {wr_id}')


class Env:
    """A context, PD, two MRs and helpers to make connected QPs."""

    def __init__(self):
        self.ctx = Context(name=DEV)
        self.pd = PD(self.ctx)
        self.gid = self.ctx.query_gid(PORT, GID_INDEX)
        self.mr = MR(self.pd, 1 << 16, ACCESS)
        self.mr2 = MR(self.pd, 1 << 16, ACCESS)

    def sge(self, mr, off, length):
        return SGE(mr.buf + off, length, mr.lkey)

    def ah_attr(self):
        gr = GlobalRoute(dgid=self.gid, sgid_index=GID_INDEX, hop_limit=64)
        return AHAttr(is_global=1, port_num=PORT, gr=gr)

    def qp_init(self, qp_type, scq, rcq=None, srq=None, send_wr=64,
                recv_wr=64, send_sge=MAX_SEND_SGE, recv_sge=MAX_RECV_SGE,
                sig_all=0, inline=0):
        cap = QPCap(max_send_wr=send_wr, max_recv_wr=0 if srq else recv_wr,
                    max_send_sge=send_sge,
                    max_recv_sge=0 if srq else recv_sge,
                    max_inline_data=inline)
        return QPInitAttr(qp_type=qp_type, scq=scq, rcq=rcq or scq, srq=srq,
                          cap=cap, sq_sig_all=sig_all)

    def connect_one(self, x, y):
        """Take QP x (RESET or INIT) to RTS, with y as its destination."""
        attr = QPAttr(qp_state=e.IBV_QPS_INIT, path_mtu=e.IBV_MTU_1024)
        attr.qp_access_flags = ACCESS
        attr.pkey_index = 0
        attr.port_num = PORT
        attr.ah_attr = self.ah_attr()
        attr.dest_qp_num = y.qp_num
        attr.rq_psn = 0
        attr.sq_psn = 0
        attr.max_dest_rd_atomic = 16
        attr.max_rd_atomic = 16
        attr.min_rnr_timer = 1
        attr.timeout = 14
        attr.retry_cnt = 7
        attr.rnr_retry = 7
        attr.qkey = QKEY
        x.to_rts(attr)

    def connect(self, a, b):
        """Take QPs a and b to RTS, each the other's destination."""
        self.connect_one(a, b)
        self.connect_one(b, a)

    def rc_pair(self, cq_a, cq_b=None, qp_class=QP, init=None, **kw):
        cq_b = cq_b or cq_a
        if init is None:
            a = QP(self.pd, self.qp_init(e.IBV_QPT_RC, cq_a, **kw))
            b = QP(self.pd, self.qp_init(e.IBV_QPT_RC, cq_b, **kw))
        else:
            a = qp_class(self.ctx, init(cq_a))
            b = qp_class(self.ctx, init(cq_b))
        self.connect(a, b)
        return a, b


def to_state(qp, state):
    qp.modify(QPAttr(qp_state=state), e.IBV_QP_STATE)


def recv(qp, env, wr_id, off, length, mr=None):
    qp.post_recv(RecvWR(wr_id=wr_id, num_sge=1,
                        sg=[env.sge(mr or env.mr2, off, length)]))


# --- tests ---------------------------------------------------------------------


def t_rc_send_recv(env):
    """RC SEND with immediate: both completions, every field, the data"""
    cq = CQ(env.ctx, 64)
    a, b = env.rc_pair(cq)
    env.mr.write(b'x' * 100 + b'qrdma!' + b'y' * 100, 206, 0)
    recv(b, env, 7, 0, 4096)
    wr = SendWR(wr_id=5, opcode=e.IBV_WR_SEND_WITH_IMM, num_sge=1,
                sg=[env.sge(env.mr, 0, 206)], imm_data=0x12345678)
    a.post_send(wr)
    wcs = {w.wr_id: w for w in poll(cq, 2)}
    s, r = wcs[5], wcs[7]
    ok(s, e.IBV_WC_SEND)
    check(s.qp_num == a.qp_num, f'send qp_num {s.qp_num:#x}')
    ok(r, e.IBV_WC_RECV)
    check(r.qp_num == b.qp_num, f'recv qp_num {r.qp_num:#x}')
    check(r.byte_len == 206, f'byte_len {r.byte_len}')
    check(r.wc_flags & e.IBV_WC_WITH_IMM, f'wc_flags {r.wc_flags:#x}')
    check(r.imm_data == 0x12345678, f'imm_data {r.imm_data:#x}')
    check(env.mr2.read(206, 0) == env.mr.read(206, 0), 'data differs')


def t_rc_rdma_atomic(env):
    """RC RDMA WRITE (with imm), READ, CMP_SWP, FETCH_ADD: data and results"""
    cq = CQ(env.ctx, 64)
    a, b = env.rc_pair(cq)
    env.mr.write(bytes(range(256)) * 4, 1024, 0)
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                sg=[env.sge(env.mr, 0, 1024)])
    wr.set_wr_rdma(env.mr2.rkey, env.mr2.buf + 4096)
    a.post_send(wr)
    ok(poll(cq)[0], e.IBV_WC_RDMA_WRITE, 1)
    check(env.mr2.read(1024, 4096) == env.mr.read(1024, 0), 'WRITE data')

    recv(b, env, 9, 0, 16)
    wr = SendWR(wr_id=2, opcode=e.IBV_WR_RDMA_WRITE_WITH_IMM, num_sge=1,
                sg=[env.sge(env.mr, 0, 64)], imm_data=0xabcd)
    wr.set_wr_rdma(env.mr2.rkey, env.mr2.buf + 8192)
    a.post_send(wr)
    wcs = {w.wr_id: w for w in poll(cq, 2)}
    ok(wcs[2], e.IBV_WC_RDMA_WRITE)
    ok(wcs[9], e.IBV_WC_RECV_RDMA_WITH_IMM)
    check(wcs[9].imm_data == 0xabcd, f'imm {wcs[9].imm_data:#x}')

    env.mr2.write(b'R' * 512, 512, 12288)
    wr = SendWR(wr_id=3, opcode=e.IBV_WR_RDMA_READ, num_sge=2,
                sg=[env.sge(env.mr, 16384, 256), env.sge(env.mr, 20000, 256)])
    wr.set_wr_rdma(env.mr2.rkey, env.mr2.buf + 12288)
    a.post_send(wr)
    ok(poll(cq)[0], e.IBV_WC_RDMA_READ, 3)
    check(env.mr.read(256, 16384) + env.mr.read(256, 20000) == b'R' * 512,
          'READ data')

    env.mr2.write((41).to_bytes(8, 'little'), 8, 24576)
    wr = SendWR(wr_id=4, opcode=e.IBV_WR_ATOMIC_FETCH_AND_ADD, num_sge=1,
                sg=[env.sge(env.mr, 24576, 8)])
    wr.set_wr_atomic(env.mr2.rkey, env.mr2.buf + 24576, 1)
    a.post_send(wr)
    ok(poll(cq)[0], e.IBV_WC_FETCH_ADD, 4)
    check(int.from_bytes(env.mr.read(8, 24576), 'little') == 41, 'FADD old')
    check(int.from_bytes(env.mr2.read(8, 24576), 'little') == 42, 'FADD new')
    wr = SendWR(wr_id=5, opcode=e.IBV_WR_ATOMIC_CMP_AND_SWP, num_sge=1,
                sg=[env.sge(env.mr, 24576, 8)])
    wr.set_wr_atomic(env.mr2.rkey, env.mr2.buf + 24576, 42, 7)
    a.post_send(wr)
    ok(poll(cq)[0], e.IBV_WC_COMP_SWAP, 5)
    check(int.from_bytes(env.mr2.read(8, 24576), 'little') == 7, 'CAS new')


def t_inline(env):
    """IBV_SEND_INLINE up to the QP's max_inline_data; more is EINVAL"""
    cq = CQ(env.ctx, 64)
    a, b = env.rc_pair(cq, inline=MAX_INLINE)
    env.mr.write(b'i' * MAX_INLINE, MAX_INLINE, 0)
    recv(b, env, 1, 0, 4096)
    wr = SendWR(wr_id=2, num_sge=2, sg=[env.sge(env.mr, 0, 100),
                                         env.sge(env.mr, 100, 92)],
                send_flags=e.IBV_SEND_SIGNALED | e.IBV_SEND_INLINE)
    a.post_send(wr)
    wcs = {w.wr_id: w for w in poll(cq, 2)}
    ok(wcs[2], e.IBV_WC_SEND)
    check(wcs[1].byte_len == MAX_INLINE, f'byte_len {wcs[1].byte_len}')
    check(env.mr2.read(MAX_INLINE, 0) == b'i' * MAX_INLINE, 'data')
    wr = SendWR(wr_id=3, num_sge=1, sg=[env.sge(env.mr, 0, MAX_INLINE + 1)],
                send_flags=e.IBV_SEND_SIGNALED | e.IBV_SEND_INLINE)
    expect_errno(errno.EINVAL, a.post_send, wr)
    poll_none(cq)


def t_unsignaled(env):
    """Unsignaled sends free their slots when a later signaled one completes"""
    cq = CQ(env.ctx, 64)
    a, b = env.rc_pair(cq, send_wr=8)
    for rnd in range(6):
        for i in range(7):
            wr = SendWR(wr_id=100 * rnd + i, opcode=e.IBV_WR_RDMA_WRITE,
                        num_sge=1, sg=[env.sge(env.mr, 0, 64)], send_flags=0)
            wr.set_wr_rdma(env.mr2.rkey, env.mr2.buf)
            a.post_send(wr)
        wr = SendWR(wr_id=100 * rnd + 7, opcode=e.IBV_WR_RDMA_WRITE,
                    num_sge=1, sg=[env.sge(env.mr, 0, 64)])
        wr.set_wr_rdma(env.mr2.rkey, env.mr2.buf)
        a.post_send(wr)
        ok(poll(cq)[0], e.IBV_WC_RDMA_WRITE, 100 * rnd + 7)
    poll_none(cq, 0.1)


def t_s38_recv(env):
    """S38 post_recv: EINVAL in RESET and over max_recv_sge, ENOMEM when full"""
    cq = CQ(env.ctx, 64)
    qp = QP(env.pd, env.qp_init(e.IBV_QPT_RC, cq, recv_wr=4, recv_sge=2))
    # IB: a QP in RESET takes no receive.
    expect_errno(errno.EINVAL, qp.post_recv,
                 RecvWR(wr_id=0, num_sge=1, sg=[env.sge(env.mr2, 0, 64)]))
    attr = QPAttr(qp_state=e.IBV_QPS_INIT)
    attr.qp_access_flags = ACCESS
    attr.pkey_index = 0
    attr.port_num = PORT
    qp.to_init(attr)
    cap = qp.query(e.IBV_QP_CAP)[0].cap
    sges = [env.sge(env.mr2, 64 * i, 64) for i in range(cap.max_recv_sge + 1)]
    bad = RecvWR(wr_id=0, num_sge=1, sg=sges[:1])
    wr2 = RecvWR(wr_id=2, num_sge=len(sges), sg=sges)
    wr1 = RecvWR(wr_id=1, num_sge=1, sg=sges[:1], next_wr=wr2)
    try:
        qp.post_recv(wr1, bad)
        raise Fail('a WR over max_recv_sge was accepted')
    except PyverbsRDMAError as ex:
        check(ex.error_code == errno.EINVAL, f'errno {ex.error_code}')
    check(bad.wr_id == 2, f'bad_wr is wr_id {bad.wr_id}, want 2')
    # wr 1 was posted: room for max_recv_wr - 1 more.
    n = 1
    while n < 1000:
        try:
            qp.post_recv(RecvWR(wr_id=10 + n, num_sge=1, sg=sges[:1]), bad)
        except PyverbsRDMAError as ex:
            check(ex.error_code == errno.ENOMEM, f'errno {ex.error_code}')
            break
        n += 1
    check(n == cap.max_recv_wr,
          f'{n} receives fit, max_recv_wr {cap.max_recv_wr}')
    # Flush them: every one completes once, in order.
    to_state(qp, e.IBV_QPS_ERR)
    wcs = poll(cq, n)
    check([w.wr_id for w in wcs] == [1] + list(range(11, 10 + n)),
          f'flushed {[w.wr_id for w in wcs]}')
    check(all(w.status == e.IBV_WC_WR_FLUSH_ERR for w in wcs), 'status')


def t_s38_send(env):
    """S38 post_send: EINVAL over max_send_sge, ENOMEM when full, bad_wr"""
    cq = CQ(env.ctx, 256)
    a, b = env.rc_pair(cq, send_wr=16, send_sge=2)
    cap = a.query(e.IBV_QP_CAP)[0].cap
    sges = [env.sge(env.mr, 64 * i, 64) for i in range(cap.max_send_sge + 1)]
    bad = SendWR(wr_id=0, num_sge=1, sg=sges[:1])
    wr2 = SendWR(wr_id=2, num_sge=len(sges), sg=sges,
                 opcode=e.IBV_WR_RDMA_WRITE)
    wr2.set_wr_rdma(env.mr2.rkey, env.mr2.buf)
    wr1 = SendWR(wr_id=1, num_sge=1, sg=sges[:1], opcode=e.IBV_WR_RDMA_WRITE,
                 next_wr=wr2)
    wr1.set_wr_rdma(env.mr2.rkey, env.mr2.buf)
    try:
        a.post_send(wr1, bad)
        raise Fail('a WR over max_send_sge was accepted')
    except PyverbsRDMAError as ex:
        check(ex.error_code == errno.EINVAL, f'errno {ex.error_code}')
    check(bad.wr_id == 2, f'bad_wr is wr_id {bad.wr_id}, want 2')
    ok(poll(cq)[0], e.IBV_WC_RDMA_WRITE, 1)
    # Fill the queue faster than the device drains it: ENOMEM, never more
    # outstanding than max_send_wr.
    # pyverbs links WRs by pointer: every one must stay referenced.
    chain = []
    head = None
    for i in reversed(range(4 * cap.max_send_wr)):
        head = SendWR(wr_id=1000 + i, num_sge=1, sg=sges[:1],
                      opcode=e.IBV_WR_RDMA_WRITE, next_wr=head)
        head.set_wr_rdma(env.mr2.rkey, env.mr2.buf)
        chain.append(head)
    try:
        a.post_send(head, bad)
        raise Fail(f'{4 * cap.max_send_wr} WRs fit {cap.max_send_wr}')
    except PyverbsRDMAError as ex:
        check(ex.error_code == errno.ENOMEM, f'errno {ex.error_code}')
    posted = bad.wr_id - 1000
    check(posted == cap.max_send_wr,
          f'{posted} posted before ENOMEM, max_send_wr {cap.max_send_wr}')
    wcs = poll(cq, posted)
    check([w.wr_id for w in wcs] == list(range(1000, 1000 + posted)),
          'completions out of order')
    for w in wcs:
        ok(w)
    # Bad opcode for the QP type, and a UD-only field: EINVAL.
    wr = SendWR(wr_id=3, num_sge=1, sg=sges[:1], opcode=e.IBV_WR_BIND_MW)
    expect_errno(errno.EINVAL, a.post_send, wr)


def t_bad_lkey(env):
    """A bad lkey completes in error; the QP goes to ERR and flushes (S35)"""
    cq = CQ(env.ctx, 64)
    a, b = env.rc_pair(cq)
    recv(b, env, 1, 0, 4096)
    wr = SendWR(wr_id=2, num_sge=1, sg=[SGE(env.mr.buf, 64,
                                             env.mr.lkey ^ 0x5a5a00)])
    a.post_send(wr)
    wc = poll(cq)[0]
    check(wc.wr_id == 2 and wc.status == e.IBV_WC_LOC_PROT_ERR,
          f'wr_id {wc.wr_id} status {wc.status}')
    check(a.query(e.IBV_QP_STATE)[0].qp_state == e.IBV_QPS_ERR, 'not ERR')
    # S35: posting in ERR is accepted and completes flushed.
    a.post_send(SendWR(wr_id=3, num_sge=1, sg=[env.sge(env.mr, 0, 8)]))
    a.post_recv(RecvWR(wr_id=4, num_sge=1, sg=[env.sge(env.mr, 0, 8)]))
    wcs = {w.wr_id: w for w in poll(cq, 2)}
    check(wcs[3].status == e.IBV_WC_WR_FLUSH_ERR, f'send {wcs[3].status}')
    check(wcs[4].status == e.IBV_WC_WR_FLUSH_ERR, f'recv {wcs[4].status}')
    # b's receive is still there, unconsumed.
    poll_none(cq, 0.1)


def t_s36_reset(env):
    """S36: RESET drops the QP's CQEs not polled yet; the QP works again"""
    cq = CQ(env.ctx, 64)
    a, b = env.rc_pair(cq)
    for i in range(5):
        recv(a, env, 10 + i, 0, 64)
    to_state(a, e.IBV_QPS_ERR)
    time.sleep(0.3)             # the 5 flush CQEs are in the CQ, unpolled
    to_state(a, e.IBV_QPS_RESET)
    poll_none(cq)
    env.connect_one(a, b)       # a back to RTS, b as it was
    recv(a, env, 20, 0, 64)
    b.post_send(SendWR(wr_id=21, num_sge=1, sg=[env.sge(env.mr, 0, 32)]))
    wcs = {w.wr_id: w for w in poll(cq, 2)}
    ok(wcs[20], e.IBV_WC_RECV)
    ok(wcs[21], e.IBV_WC_SEND)
    check(wcs[20].qp_num == a.qp_num, 'recv on another QP')


def t_s12_destroy(env):
    """S12: destroying a QP drops its CQEs still in the CQ; others stay"""
    cq = CQ(env.ctx, 64)
    a, b = env.rc_pair(cq)
    c, d = env.rc_pair(cq)
    for i in range(3):
        recv(a, env, 30 + i, 0, 64)
    recv(c, env, 40, 0, 64)
    to_state(a, e.IBV_QPS_ERR)
    d.post_send(SendWR(wr_id=41, num_sge=1, sg=[env.sge(env.mr, 0, 16)]))
    time.sleep(0.3)
    a.close()
    wcs = poll(cq, 2)
    check(sorted(w.wr_id for w in wcs) == [40, 41],
          f'got {[w.wr_id for w in wcs]}')
    poll_none(cq, 0.1)


def t_cq_ex(env):
    """ibv_create_cq_ex: start_poll/next_poll/end_poll and read_* fields"""
    flags = (e.IBV_WC_EX_WITH_BYTE_LEN | e.IBV_WC_EX_WITH_IMM |
             e.IBV_WC_EX_WITH_QP_NUM | e.IBV_WC_EX_WITH_SRC_QP |
             e.IBV_WC_EX_WITH_SL)
    cq = CQEX(env.ctx, CqInitAttrEx(cqe=32, wc_flags=flags))
    a, b = env.rc_pair(cq)
    check(cq.start_poll(PollCqAttr()) == errno.ENOENT, 'empty CQ polled')
    for i in range(3):
        recv(b, env, 50 + i, 0, 4096)
    for i in range(3):
        a.post_send(SendWR(wr_id=60 + i, opcode=e.IBV_WR_SEND_WITH_IMM,
                           num_sge=1, sg=[env.sge(env.mr, 0, 100 + i)],
                           imm_data=0x1000 + i))
    got = {}
    end = time.monotonic() + 10
    while len(got) < 6 and time.monotonic() < end:
        if cq.start_poll(PollCqAttr()) != 0:
            continue
        while True:
            got[cq.wr_id] = (cq.status, cq.read_opcode(), cq.read_byte_len(),
                             cq.read_imm_data(), cq.read_qp_num(),
                             cq.read_wc_flags())
            if cq.poll_next() != 0:
                break
        cq.end_poll()
    check(len(got) == 6, f'{len(got)} of 6 completions')
    for i in range(3):
        st, op, length, imm, qpn, wcf = got[50 + i]
        check(st == e.IBV_WC_SUCCESS and op == e.IBV_WC_RECV,
              f'recv {50 + i}: {st} {op}')
        check(length == 100 + i and imm == 0x1000 + i and qpn == b.qp_num,
              f'recv {50 + i}: len {length} imm {imm:#x} qpn {qpn:#x}')
        check(wcf & e.IBV_WC_WITH_IMM, f'wc_flags {wcf:#x}')
        st, op, _, _, qpn, _ = got[60 + i]
        check(st == e.IBV_WC_SUCCESS and op == e.IBV_WC_SEND and
              qpn == a.qp_num, f'send {60 + i}: {st} {op} {qpn:#x}')
    check(cq.start_poll(PollCqAttr()) == errno.ENOENT, 'leftovers')


def qpex_init(env, cq, ops, qp_type=e.IBV_QPT_RC, send_wr=64):
    cap = QPCap(max_send_wr=send_wr, max_recv_wr=64, max_send_sge=4,
                max_recv_sge=4, max_inline_data=MAX_INLINE)
    return QPInitAttrEx(qp_type=qp_type, scq=cq, rcq=cq, cap=cap, pd=env.pd,
                        comp_mask=(e.IBV_QP_INIT_ATTR_PD |
                                   e.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS),
                        send_ops_flags=ops)


def t_qp_ex(env):
    """ibv_create_qp_ex with ibv_wr_*: a batch, inline, abort, a bad session"""
    ops = (e.IBV_QP_EX_WITH_SEND | e.IBV_QP_EX_WITH_RDMA_WRITE |
           e.IBV_QP_EX_WITH_RDMA_READ | e.IBV_QP_EX_WITH_SEND_WITH_IMM |
           e.IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
    cq = CQ(env.ctx, 64)
    a, b = env.rc_pair(cq, qp_class=QPEx,
                       init=lambda c: qpex_init(env, c, ops))
    env.mr.write(b'W' * 256 + b'I' * 64, 320, 0)
    recv(b, env, 70, 0, 4096)
    a.wr_start()
    a.wr_id = 71
    a.wr_flags = e.IBV_SEND_SIGNALED
    a.wr_rdma_write(env.mr2.rkey, env.mr2.buf + 8192)
    a.wr_set_sge(env.sge(env.mr, 0, 256))
    a.wr_id = 72
    a.wr_send_imm(0x4242)
    a.wr_set_inline_data(env.mr.buf + 256, 64)
    a.wr_id = 73
    a.wr_flags = 0
    a.wr_rdma_write(env.mr2.rkey, env.mr2.buf + 16384)
    a.wr_set_sge_list(2, [env.sge(env.mr, 0, 8), env.sge(env.mr, 256, 8)])
    a.wr_complete()
    wcs = {w.wr_id: w for w in poll(cq, 3)}
    ok(wcs[71], e.IBV_WC_RDMA_WRITE)
    ok(wcs[72], e.IBV_WC_SEND)
    ok(wcs[70], e.IBV_WC_RECV)
    # pyverbs' wr_send_imm() converts to network order, WC.imm_data not.
    check(wcs[70].imm_data == socket.htonl(0x4242) and
          wcs[70].byte_len == 64,
          f'imm {wcs[70].imm_data:#x} len {wcs[70].byte_len}')
    check(env.mr2.read(64, 0) == b'I' * 64, 'inline data')
    check(env.mr2.read(256, 8192) == b'W' * 256, 'write data')
    check(env.mr2.read(16, 16384) == b'W' * 8 + b'I' * 8, 'sge list data')
    # wr_abort: nothing goes out.
    a.wr_start()
    a.wr_id = 74
    a.wr_flags = e.IBV_SEND_SIGNALED
    a.wr_rdma_write(env.mr2.rkey, env.mr2.buf)
    a.wr_set_sge(env.sge(env.mr, 0, 8))
    a.wr_abort()
    poll_none(cq, 0.2)
    # A bad WR fails wr_complete, and nothing of the session is posted.
    a.wr_start()
    a.wr_id = 75
    a.wr_flags = e.IBV_SEND_SIGNALED
    a.wr_rdma_write(env.mr2.rkey, env.mr2.buf)
    a.wr_set_sge(env.sge(env.mr, 0, 8))
    a.wr_id = 76
    a.wr_rdma_write(env.mr2.rkey, env.mr2.buf)
    a.wr_set_inline_data(env.mr.buf, MAX_INLINE + 1)
    expect_errno(errno.EINVAL, a.wr_complete)
    poll_none(cq, 0.2)
    # Then the QP still works.
    env.mr2.write((5).to_bytes(8, 'little'), 8, 32768)
    a.wr_start()
    a.wr_id = 77
    a.wr_flags = e.IBV_SEND_SIGNALED
    a.wr_atomic_fetch_add(env.mr2.rkey, env.mr2.buf + 32768, 10)
    a.wr_set_sge(env.sge(env.mr, 32768, 8))
    a.wr_complete()
    ok(poll(cq)[0], e.IBV_WC_FETCH_ADD, 77)
    check(int.from_bytes(env.mr.read(8, 32768), 'little') == 5, 'old value')
    check(int.from_bytes(env.mr2.read(8, 32768), 'little') == 15, 'sum')
    # A full queue fails the session with ENOMEM.
    a.wr_start()
    for i in range(200):
        a.wr_id = 1000 + i
        a.wr_flags = 0
        a.wr_rdma_write(env.mr2.rkey, env.mr2.buf)
        a.wr_set_sge(env.sge(env.mr, 0, 8))
    expect_errno(errno.ENOMEM, a.wr_complete)
    poll_none(cq, 0.2)


def t_srq(env):
    """SRQ shared by two RC QPs; ENOMEM when full; slots come back"""
    cq = CQ(env.ctx, 256)
    srq = SRQ(env.pd, SrqInitAttr(SrqAttr(max_wr=16, max_sge=2)))
    max_wr = srq.query().max_wr
    a, b = env.rc_pair(cq, srq=srq)
    c, d = env.rc_pair(cq, srq=srq)
    expect_errno(errno.EINVAL, b.post_recv,
                 RecvWR(wr_id=1, num_sge=1, sg=[env.sge(env.mr2, 0, 64)]))
    n = 0
    while n < 10 * max_wr:
        try:
            srq.post_recv(RecvWR(wr_id=100 + n, num_sge=1,
                                 sg=[env.sge(env.mr2, 64 * (n % 64), 64)]))
        except PyverbsRDMAError as ex:
            check(ex.error_code == errno.ENOMEM, f'errno {ex.error_code}')
            break
        n += 1
    check(n == max_wr, f'{n} receives fit an SRQ of {max_wr}')
    for rnd in range(3):
        for i in range(max_wr):
            (a if i % 2 else c).post_send(
                SendWR(wr_id=1000 * rnd + i, num_sge=1,
                       sg=[env.sge(env.mr, 0, 32)]))
        wcs = poll(cq, 2 * max_wr)
        recvs = [w for w in wcs if w.opcode == e.IBV_WC_RECV]
        check(len(recvs) == max_wr, f'{len(recvs)} receives')
        for w in wcs:
            ok(w)
        qpns = {w.qp_num for w in recvs}
        check(qpns == {b.qp_num, d.qp_num}, f'receives on {qpns}')
        # Every slot is free again.
        for i in range(max_wr):
            srq.post_recv(RecvWR(wr_id=100 + i, num_sge=1,
                                 sg=[env.sge(env.mr2, 0, 64)]))


def t_srq_resize(env):
    """SRQ resize keeps the posted receives, in order, and takes more"""
    cq = CQ(env.ctx, 256)
    srq = SRQ(env.pd, SrqInitAttr(SrqAttr(max_wr=8, max_sge=1)))
    small = srq.query().max_wr
    a, b = env.rc_pair(cq, srq=srq)
    n = 4 * small

    def post(i):
        srq.post_recv(RecvWR(wr_id=500 + i, num_sge=1,
                             sg=[env.sge(env.mr2, 64 * i, 64)]))

    for i in range(small):
        post(i)
    # Below what is posted: refused, and nothing changes.
    if small > 1:
        expect_errno(errno.EINVAL, srq.modify,
                     SrqAttr(max_wr=small // 2), e.IBV_SRQ_MAX_WR)
    srq.modify(SrqAttr(max_wr=n), e.IBV_SRQ_MAX_WR)
    check(srq.query().max_wr >= n, f'max_wr {srq.query().max_wr} < {n}')
    for i in range(small, n):
        post(i)
    for i in range(n):
        env.mr.write(bytes([i]) * 32, 32, 64 * i)
        a.post_send(SendWR(wr_id=i, num_sge=1,
                           sg=[env.sge(env.mr, 64 * i, 32)]))
    wcs = poll(cq, 2 * n)
    for w in wcs:
        ok(w)
    recvs = [w.wr_id for w in wcs if w.opcode == e.IBV_WC_RECV]
    check(recvs == [500 + i for i in range(n)],
          f'receives completed as {recvs}')
    for i in range(n):
        check(env.mr2.read(32, 64 * i) == bytes([i]) * 32,
              f'message {i} is not in receive {i}')


def t_ud(env):
    """UD: AH, SEND with GRH and src_qp; RDMA on UD is EINVAL"""
    cq = CQ(env.ctx, 64)
    a = QP(env.pd, env.qp_init(e.IBV_QPT_UD, cq))
    b = QP(env.pd, env.qp_init(e.IBV_QPT_UD, cq))
    for qp in (a, b):
        attr = QPAttr(qp_state=e.IBV_QPS_INIT)
        attr.qkey = QKEY
        attr.pkey_index = 0
        attr.port_num = PORT
        qp.to_rts(attr)
    ah = AH(env.pd, attr=env.ah_attr())
    recv(b, env, 80, 0, GRH + 512)
    env.mr.write(b'u' * 512, 512, 0)
    wr = SendWR(wr_id=81, num_sge=1, sg=[env.sge(env.mr, 0, 512)])
    wr.set_wr_ud(ah, b.qp_num, QKEY)
    a.post_send(wr)
    wcs = {w.wr_id: w for w in poll(cq, 2)}
    ok(wcs[81], e.IBV_WC_SEND)
    r = wcs[80]
    ok(r, e.IBV_WC_RECV)
    check(r.byte_len == GRH + 512, f'byte_len {r.byte_len}')
    check(r.src_qp == a.qp_num, f'src_qp {r.src_qp:#x}')
    check(r.wc_flags & e.IBV_WC_GRH, f'wc_flags {r.wc_flags:#x}')
    check(env.mr2.read(512, GRH) == b'u' * 512, 'data')
    # RDMA on UD is refused at post time.
    wr = SendWR(wr_id=82, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                sg=[env.sge(env.mr, 0, 8)])
    expect_errno(errno.EINVAL, a.post_send, wr)


def t_resize_cq(env):
    """resize_cq keeps the unpolled completions, in order"""
    cq = CQ(env.ctx, 8)
    a, b = env.rc_pair(cq)
    for i in range(6):
        wr = SendWR(wr_id=90 + i, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                    sg=[env.sge(env.mr, 0, 8)])
        wr.set_wr_rdma(env.mr2.rkey, env.mr2.buf)
        a.post_send(wr)
    time.sleep(0.3)
    ok(poll(cq)[0], wr_id=90)
    cq.resize(100)
    check(cq.cqe >= 100, f'cqe {cq.cqe}')
    wcs = poll(cq, 5)
    check([w.wr_id for w in wcs] == list(range(91, 96)),
          f'after resize {[w.wr_id for w in wcs]}')
    for i in range(40):
        wr = SendWR(wr_id=200 + i, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                    sg=[env.sge(env.mr, 0, 8)])
        wr.set_wr_rdma(env.mr2.rkey, env.mr2.buf)
        a.post_send(wr)
    wcs = poll(cq, 40)
    check([w.wr_id for w in wcs] == list(range(200, 240)), 'after more')


def t_events(env):
    """req_notify_cq and a completion channel deliver an event"""
    ch = CompChannel(env.ctx)
    cq = CQ(env.ctx, 16, None, ch, 0)
    a, b = env.rc_pair(cq)
    cq.req_notify()
    recv(b, env, 1, 0, 64)
    a.post_send(SendWR(wr_id=2, num_sge=1, sg=[env.sge(env.mr, 0, 8)]))
    # ibv_get_cq_event blocks: the alarm turns a lost event into a failure.
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(10)
    try:
        ch.get_cq_event(cq)
    finally:
        signal.alarm(0)
    cq.ack_events(1)
    check(len(poll(cq, 2)) == 2, 'completions')
    # Armed for solicited only: an unsolicited SEND raises no event, a
    # solicited one does.
    cq.req_notify(True)
    recv(b, env, 3, 0, 64)
    recv(b, env, 5, 0, 64)
    a.post_send(SendWR(wr_id=4, num_sge=1, sg=[env.sge(env.mr, 0, 8)]))
    check(len(poll(cq, 2)) == 2, 'unsolicited completions')
    a.post_send(SendWR(wr_id=6, num_sge=1, sg=[env.sge(env.mr, 0, 8)],
                       send_flags=e.IBV_SEND_SIGNALED |
                       e.IBV_SEND_SOLICITED))
    signal.alarm(10)
    try:
        ch.get_cq_event(cq)
    finally:
        signal.alarm(0)
    cq.ack_events(1)
    check(len(poll(cq, 2)) == 2, 'solicited completions')


def t_many_qps(env):
    """64 QPs on 4 CQs, RC and UC, traffic on all of them"""
    cqs = [CQ(env.ctx, 512) for _ in range(4)]
    pairs = []
    for i in range(32):
        qt = e.IBV_QPT_RC if i % 2 else e.IBV_QPT_UC
        a = QP(env.pd, env.qp_init(qt, cqs[i % 4], cqs[(i + 1) % 4],
                                   send_wr=8, recv_wr=8))
        b = QP(env.pd, env.qp_init(qt, cqs[(i + 2) % 4], cqs[(i + 3) % 4],
                                   send_wr=8, recv_wr=8))
        env.connect(a, b)
        pairs.append((a, b))
    for rnd in range(3):
        for i, (a, b) in enumerate(pairs):
            recv(b, env, 10000 * rnd + i, 64 * i, 64)
            a.post_send(SendWR(wr_id=10000 * rnd + 100 + i, num_sge=1,
                               sg=[env.sge(env.mr, 0, 64)]))
        total = 0
        end = time.monotonic() + 20
        while total < 2 * len(pairs) and time.monotonic() < end:
            for cq in cqs:
                n, wcs = cq.poll(64)
                for w in wcs:
                    ok(w)
                total += n
        check(total == 2 * len(pairs), f'round {rnd}: {total} completions')


TESTS = [
    t_rc_send_recv, t_rc_rdma_atomic, t_inline, t_unsignaled, t_s38_recv,
    t_s38_send, t_bad_lkey, t_s36_reset, t_s12_destroy, t_cq_ex, t_qp_ex,
    t_srq, t_srq_resize, t_ud, t_resize_cq, t_events, t_many_qps,
]


def main():
    env = Env()
    failed = 0
    print(f'1..{len(TESTS)}', flush=True)
    for n, t in enumerate(TESTS, 1):
        desc = t.__doc__.strip().splitlines()[0]
        try:
            t(env)
            print(f'ok {n} - {desc}', flush=True)
        except Exception as ex:      # every failure is a TAP line
            failed += 1
            print(f'not ok {n} - {desc}', flush=True)
            for line in traceback.format_exc().splitlines():
                print(f'# {line}')
            if isinstance(ex, Fail):
                print(f'# {t.__name__}: {ex}')
            sys.stdout.flush()
    print(f'# {len(TESTS) - failed}/{len(TESTS)} passed')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
