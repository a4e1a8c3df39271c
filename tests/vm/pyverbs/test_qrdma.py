# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""libqrdma's verbs semantics, through pyverbs: a module of rdma-core's
test suite (qrdma_base.py says how it is run).

Each test builds what it needs on one device (QPs talk to each other over
the device's loopback fabric) and checks what libqrdma returns: work
completions field by field, the errno of bad requests (S38), flushing in
ERR (S35), RESET and destroy dropping a QP's completions (S36, S12), the
extended CQ and QP APIs, SRQ, UD, resize, completion events.  The first
line of each test's docstring is what the test is reported as.
"""

import errno
import signal
import socket
import time

import pyverbs.enums as e
from pyverbs.addr import AH
from pyverbs.cq import CQ, CQEX, CompChannel, CqInitAttrEx, PollCqAttr
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QP, QPAttr, QPCap, QPEx, QPInitAttrEx
from pyverbs.srq import SRQ, SrqAttr, SrqInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR

from tests.qrdma_base import (ACCESS, GRH, MAX_INLINE, QKEY,
                              QrdmaAPITestCase, check, expect_errno, ok,
                              poll, poll_none, to_state)


def on_alarm(signum, frame):
    raise AssertionError('no completion event in 10 s')


def wait_event(ch, cq):
    """The next event of cq on ch, acknowledged.  ibv_get_cq_event blocks:
    the alarm turns a lost event into a failure."""
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(10)
    try:
        ch.get_cq_event(cq)
    finally:
        signal.alarm(0)
    cq.ack_events(1)


class QrdmaSemanticsTest(QrdmaAPITestCase):
    """What libqrdma answers, verb by verb, on one qrdma device."""

    def test_rc_send_recv(self):
        """RC SEND with immediate: both completions, every field, the data"""
        cq = CQ(self.ctx, 64)
        a, b = self.rc_pair(cq)
        self.mr.write(b'x' * 100 + b'qrdma!' + b'y' * 100, 206, 0)
        self.recv(b, 7, 0, 4096)
        wr = SendWR(wr_id=5, opcode=e.IBV_WR_SEND_WITH_IMM, num_sge=1,
                    sg=[self.sge(self.mr, 0, 206)], imm_data=0x12345678)
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
        check(self.mr2.read(206, 0) == self.mr.read(206, 0), 'data differs')

    def test_rc_rdma_atomic(self):
        """RC RDMA WRITE (with imm), READ, CMP_SWP, FETCH_ADD: data and results"""
        cq = CQ(self.ctx, 64)
        a, b = self.rc_pair(cq)
        self.mr.write(bytes(range(256)) * 4, 1024, 0)
        wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                    sg=[self.sge(self.mr, 0, 1024)])
        wr.set_wr_rdma(self.mr2.rkey, self.mr2.buf + 4096)
        a.post_send(wr)
        ok(poll(cq)[0], e.IBV_WC_RDMA_WRITE, 1)
        check(self.mr2.read(1024, 4096) == self.mr.read(1024, 0), 'WRITE data')

        self.recv(b, 9, 0, 16)
        wr = SendWR(wr_id=2, opcode=e.IBV_WR_RDMA_WRITE_WITH_IMM, num_sge=1,
                    sg=[self.sge(self.mr, 0, 64)], imm_data=0xabcd)
        wr.set_wr_rdma(self.mr2.rkey, self.mr2.buf + 8192)
        a.post_send(wr)
        wcs = {w.wr_id: w for w in poll(cq, 2)}
        ok(wcs[2], e.IBV_WC_RDMA_WRITE)
        ok(wcs[9], e.IBV_WC_RECV_RDMA_WITH_IMM)
        check(wcs[9].imm_data == 0xabcd, f'imm {wcs[9].imm_data:#x}')

        self.mr2.write(b'R' * 512, 512, 12288)
        wr = SendWR(wr_id=3, opcode=e.IBV_WR_RDMA_READ, num_sge=2,
                    sg=[self.sge(self.mr, 16384, 256), self.sge(self.mr, 20000, 256)])
        wr.set_wr_rdma(self.mr2.rkey, self.mr2.buf + 12288)
        a.post_send(wr)
        ok(poll(cq)[0], e.IBV_WC_RDMA_READ, 3)
        check(self.mr.read(256, 16384) + self.mr.read(256, 20000) == b'R' * 512,
              'READ data')

        self.mr2.write((41).to_bytes(8, 'little'), 8, 24576)
        wr = SendWR(wr_id=4, opcode=e.IBV_WR_ATOMIC_FETCH_AND_ADD, num_sge=1,
                    sg=[self.sge(self.mr, 24576, 8)])
        wr.set_wr_atomic(self.mr2.rkey, self.mr2.buf + 24576, 1)
        a.post_send(wr)
        ok(poll(cq)[0], e.IBV_WC_FETCH_ADD, 4)
        check(int.from_bytes(self.mr.read(8, 24576), 'little') == 41, 'FADD old')
        check(int.from_bytes(self.mr2.read(8, 24576), 'little') == 42, 'FADD new')
        wr = SendWR(wr_id=5, opcode=e.IBV_WR_ATOMIC_CMP_AND_SWP, num_sge=1,
                    sg=[self.sge(self.mr, 24576, 8)])
        wr.set_wr_atomic(self.mr2.rkey, self.mr2.buf + 24576, 42, 7)
        a.post_send(wr)
        ok(poll(cq)[0], e.IBV_WC_COMP_SWAP, 5)
        check(int.from_bytes(self.mr2.read(8, 24576), 'little') == 7, 'CAS new')

    def test_inline(self):
        """IBV_SEND_INLINE up to the QP's max_inline_data; more is EINVAL"""
        cq = CQ(self.ctx, 64)
        a, b = self.rc_pair(cq, inline=MAX_INLINE)
        self.mr.write(b'i' * MAX_INLINE, MAX_INLINE, 0)
        self.recv(b, 1, 0, 4096)
        wr = SendWR(wr_id=2, num_sge=2, sg=[self.sge(self.mr, 0, 100),
                                             self.sge(self.mr, 100, 92)],
                    send_flags=e.IBV_SEND_SIGNALED | e.IBV_SEND_INLINE)
        a.post_send(wr)
        wcs = {w.wr_id: w for w in poll(cq, 2)}
        ok(wcs[2], e.IBV_WC_SEND)
        check(wcs[1].byte_len == MAX_INLINE, f'byte_len {wcs[1].byte_len}')
        check(self.mr2.read(MAX_INLINE, 0) == b'i' * MAX_INLINE, 'data')
        wr = SendWR(wr_id=3, num_sge=1, sg=[self.sge(self.mr, 0, MAX_INLINE + 1)],
                    send_flags=e.IBV_SEND_SIGNALED | e.IBV_SEND_INLINE)
        expect_errno(errno.EINVAL, a.post_send, wr)
        poll_none(cq)

    def test_unsignaled(self):
        """Unsignaled sends free their slots when a later signaled one completes"""
        cq = CQ(self.ctx, 64)
        a, b = self.rc_pair(cq, send_wr=8)
        for rnd in range(6):
            for i in range(7):
                wr = SendWR(wr_id=100 * rnd + i, opcode=e.IBV_WR_RDMA_WRITE,
                            num_sge=1, sg=[self.sge(self.mr, 0, 64)], send_flags=0)
                wr.set_wr_rdma(self.mr2.rkey, self.mr2.buf)
                a.post_send(wr)
            wr = SendWR(wr_id=100 * rnd + 7, opcode=e.IBV_WR_RDMA_WRITE,
                        num_sge=1, sg=[self.sge(self.mr, 0, 64)])
            wr.set_wr_rdma(self.mr2.rkey, self.mr2.buf)
            a.post_send(wr)
            ok(poll(cq)[0], e.IBV_WC_RDMA_WRITE, 100 * rnd + 7)
        poll_none(cq, 0.1)

    def test_s38_recv(self):
        """S38 post_recv: EINVAL in RESET and over max_recv_sge, ENOMEM when full"""
        cq = CQ(self.ctx, 64)
        qp = QP(self.pd, self.qp_init(e.IBV_QPT_RC, cq, recv_wr=4, recv_sge=2))
        # IB: a QP in RESET takes no receive.
        expect_errno(errno.EINVAL, qp.post_recv,
                     RecvWR(wr_id=0, num_sge=1, sg=[self.sge(self.mr2, 0, 64)]))
        attr = QPAttr(qp_state=e.IBV_QPS_INIT)
        attr.qp_access_flags = ACCESS
        attr.pkey_index = 0
        attr.port_num = self.ib_port
        qp.to_init(attr)
        cap = qp.query(e.IBV_QP_CAP)[0].cap
        sges = [self.sge(self.mr2, 64 * i, 64) for i in range(cap.max_recv_sge + 1)]
        bad = RecvWR(wr_id=0, num_sge=1, sg=sges[:1])
        wr2 = RecvWR(wr_id=2, num_sge=len(sges), sg=sges)
        wr1 = RecvWR(wr_id=1, num_sge=1, sg=sges[:1], next_wr=wr2)
        expect_errno(errno.EINVAL, qp.post_recv, wr1, bad)
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

    def test_s38_send(self):
        """S38 post_send: EINVAL over max_send_sge, ENOMEM when full, bad_wr"""
        cq = CQ(self.ctx, 256)
        a, b = self.rc_pair(cq, send_wr=16, send_sge=2)
        cap = a.query(e.IBV_QP_CAP)[0].cap
        sges = [self.sge(self.mr, 64 * i, 64) for i in range(cap.max_send_sge + 1)]
        bad = SendWR(wr_id=0, num_sge=1, sg=sges[:1])
        wr2 = SendWR(wr_id=2, num_sge=len(sges), sg=sges,
                     opcode=e.IBV_WR_RDMA_WRITE)
        wr2.set_wr_rdma(self.mr2.rkey, self.mr2.buf)
        wr1 = SendWR(wr_id=1, num_sge=1, sg=sges[:1], opcode=e.IBV_WR_RDMA_WRITE,
                     next_wr=wr2)
        wr1.set_wr_rdma(self.mr2.rkey, self.mr2.buf)
        expect_errno(errno.EINVAL, a.post_send, wr1, bad)
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
            head.set_wr_rdma(self.mr2.rkey, self.mr2.buf)
            chain.append(head)
        try:
            a.post_send(head, bad)
            raise AssertionError(f'{4 * cap.max_send_wr} WRs fit {cap.max_send_wr}')
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

    def test_bad_lkey(self):
        """A bad lkey completes in error; the QP goes to ERR and flushes (S35)"""
        cq = CQ(self.ctx, 64)
        a, b = self.rc_pair(cq)
        self.recv(b, 1, 0, 4096)
        wr = SendWR(wr_id=2, num_sge=1, sg=[SGE(self.mr.buf, 64,
                                                 self.mr.lkey ^ 0x5a5a00)])
        a.post_send(wr)
        wc = poll(cq)[0]
        check(wc.wr_id == 2 and wc.status == e.IBV_WC_LOC_PROT_ERR,
              f'wr_id {wc.wr_id} status {wc.status}')
        check(a.query(e.IBV_QP_STATE)[0].qp_state == e.IBV_QPS_ERR, 'not ERR')
        # S35: posting in ERR is accepted and completes flushed.
        a.post_send(SendWR(wr_id=3, num_sge=1, sg=[self.sge(self.mr, 0, 8)]))
        a.post_recv(RecvWR(wr_id=4, num_sge=1, sg=[self.sge(self.mr, 0, 8)]))
        wcs = {w.wr_id: w for w in poll(cq, 2)}
        check(wcs[3].status == e.IBV_WC_WR_FLUSH_ERR, f'send {wcs[3].status}')
        check(wcs[4].status == e.IBV_WC_WR_FLUSH_ERR, f'recv {wcs[4].status}')
        # b's receive is still there, unconsumed.
        poll_none(cq, 0.1)

    def test_s36_reset(self):
        """S36: RESET drops the QP's CQEs not polled yet; the QP works again"""
        cq = CQ(self.ctx, 64)
        a, b = self.rc_pair(cq)
        for i in range(5):
            self.recv(a, 10 + i, 0, 64)
        to_state(a, e.IBV_QPS_ERR)
        time.sleep(0.3)             # the 5 flush CQEs are in the CQ, unpolled
        to_state(a, e.IBV_QPS_RESET)
        poll_none(cq)
        self.connect_one(a, b)       # a back to RTS, b as it was
        self.recv(a, 20, 0, 64)
        b.post_send(SendWR(wr_id=21, num_sge=1, sg=[self.sge(self.mr, 0, 32)]))
        wcs = {w.wr_id: w for w in poll(cq, 2)}
        ok(wcs[20], e.IBV_WC_RECV)
        ok(wcs[21], e.IBV_WC_SEND)
        check(wcs[20].qp_num == a.qp_num, 'recv on another QP')

    def test_s12_destroy(self):
        """S12: destroying a QP drops its CQEs still in the CQ; others stay"""
        cq = CQ(self.ctx, 64)
        a, b = self.rc_pair(cq)
        c, d = self.rc_pair(cq)
        for i in range(3):
            self.recv(a, 30 + i, 0, 64)
        self.recv(c, 40, 0, 64)
        to_state(a, e.IBV_QPS_ERR)
        d.post_send(SendWR(wr_id=41, num_sge=1, sg=[self.sge(self.mr, 0, 16)]))
        time.sleep(0.3)
        a.close()
        wcs = poll(cq, 2)
        check(sorted(w.wr_id for w in wcs) == [40, 41],
              f'got {[w.wr_id for w in wcs]}')
        poll_none(cq, 0.1)

    def test_cq_ex(self):
        """ibv_create_cq_ex: start_poll/next_poll/end_poll and read_* fields"""
        flags = (e.IBV_WC_EX_WITH_BYTE_LEN | e.IBV_WC_EX_WITH_IMM |
                 e.IBV_WC_EX_WITH_QP_NUM | e.IBV_WC_EX_WITH_SRC_QP |
                 e.IBV_WC_EX_WITH_SL)
        cq = CQEX(self.ctx, CqInitAttrEx(cqe=32, wc_flags=flags))
        a, b = self.rc_pair(cq)
        check(cq.start_poll(PollCqAttr()) == errno.ENOENT, 'empty CQ polled')
        for i in range(3):
            self.recv(b, 50 + i, 0, 4096)
        for i in range(3):
            a.post_send(SendWR(wr_id=60 + i, opcode=e.IBV_WR_SEND_WITH_IMM,
                               num_sge=1, sg=[self.sge(self.mr, 0, 100 + i)],
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

    def qpex_init(self, cq, ops, qp_type=e.IBV_QPT_RC, send_wr=64):
        cap = QPCap(max_send_wr=send_wr, max_recv_wr=64, max_send_sge=4,
                    max_recv_sge=4, max_inline_data=MAX_INLINE)
        return QPInitAttrEx(qp_type=qp_type, scq=cq, rcq=cq, cap=cap, pd=self.pd,
                            comp_mask=(e.IBV_QP_INIT_ATTR_PD |
                                       e.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS),
                            send_ops_flags=ops)

    def test_qp_ex(self):
        """ibv_create_qp_ex with ibv_wr_*: a batch, inline, abort, a bad session"""
        ops = (e.IBV_QP_EX_WITH_SEND | e.IBV_QP_EX_WITH_RDMA_WRITE |
               e.IBV_QP_EX_WITH_RDMA_READ | e.IBV_QP_EX_WITH_SEND_WITH_IMM |
               e.IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
        cq = CQ(self.ctx, 64)
        a, b = self.rc_pair(cq, qp_class=QPEx,
                           init=lambda c: self.qpex_init(c, ops))
        self.mr.write(b'W' * 256 + b'I' * 64, 320, 0)
        self.recv(b, 70, 0, 4096)
        a.wr_start()
        a.wr_id = 71
        a.wr_flags = e.IBV_SEND_SIGNALED
        a.wr_rdma_write(self.mr2.rkey, self.mr2.buf + 8192)
        a.wr_set_sge(self.sge(self.mr, 0, 256))
        a.wr_id = 72
        a.wr_send_imm(0x4242)
        a.wr_set_inline_data(self.mr.buf + 256, 64)
        a.wr_id = 73
        a.wr_flags = 0
        a.wr_rdma_write(self.mr2.rkey, self.mr2.buf + 16384)
        a.wr_set_sge_list(2, [self.sge(self.mr, 0, 8), self.sge(self.mr, 256, 8)])
        a.wr_complete()
        wcs = {w.wr_id: w for w in poll(cq, 3)}
        ok(wcs[71], e.IBV_WC_RDMA_WRITE)
        ok(wcs[72], e.IBV_WC_SEND)
        ok(wcs[70], e.IBV_WC_RECV)
        # pyverbs' wr_send_imm() converts to network order, WC.imm_data not.
        check(wcs[70].imm_data == socket.htonl(0x4242) and
              wcs[70].byte_len == 64,
              f'imm {wcs[70].imm_data:#x} len {wcs[70].byte_len}')
        check(self.mr2.read(64, 0) == b'I' * 64, 'inline data')
        check(self.mr2.read(256, 8192) == b'W' * 256, 'write data')
        check(self.mr2.read(16, 16384) == b'W' * 8 + b'I' * 8, 'sge list data')
        # wr_abort: nothing goes out.
        a.wr_start()
        a.wr_id = 74
        a.wr_flags = e.IBV_SEND_SIGNALED
        a.wr_rdma_write(self.mr2.rkey, self.mr2.buf)
        a.wr_set_sge(self.sge(self.mr, 0, 8))
        a.wr_abort()
        poll_none(cq, 0.2)
        # A bad WR fails wr_complete, and nothing of the session is posted.
        a.wr_start()
        a.wr_id = 75
        a.wr_flags = e.IBV_SEND_SIGNALED
        a.wr_rdma_write(self.mr2.rkey, self.mr2.buf)
        a.wr_set_sge(self.sge(self.mr, 0, 8))
        a.wr_id = 76
        a.wr_rdma_write(self.mr2.rkey, self.mr2.buf)
        a.wr_set_inline_data(self.mr.buf, MAX_INLINE + 1)
        expect_errno(errno.EINVAL, a.wr_complete)
        poll_none(cq, 0.2)
        # Then the QP still works.
        self.mr2.write((5).to_bytes(8, 'little'), 8, 32768)
        a.wr_start()
        a.wr_id = 77
        a.wr_flags = e.IBV_SEND_SIGNALED
        a.wr_atomic_fetch_add(self.mr2.rkey, self.mr2.buf + 32768, 10)
        a.wr_set_sge(self.sge(self.mr, 32768, 8))
        a.wr_complete()
        ok(poll(cq)[0], e.IBV_WC_FETCH_ADD, 77)
        check(int.from_bytes(self.mr.read(8, 32768), 'little') == 5, 'old value')
        check(int.from_bytes(self.mr2.read(8, 32768), 'little') == 15, 'sum')
        # A full queue fails the session with ENOMEM.
        a.wr_start()
        for i in range(200):
            a.wr_id = 1000 + i
            a.wr_flags = 0
            a.wr_rdma_write(self.mr2.rkey, self.mr2.buf)
            a.wr_set_sge(self.sge(self.mr, 0, 8))
        expect_errno(errno.ENOMEM, a.wr_complete)
        poll_none(cq, 0.2)

    def test_srq(self):
        """SRQ shared by two RC QPs; ENOMEM when full; slots come back"""
        cq = CQ(self.ctx, 256)
        srq = SRQ(self.pd, SrqInitAttr(SrqAttr(max_wr=16, max_sge=2)))
        max_wr = srq.query().max_wr
        a, b = self.rc_pair(cq, srq=srq)
        c, d = self.rc_pair(cq, srq=srq)
        expect_errno(errno.EINVAL, b.post_recv,
                     RecvWR(wr_id=1, num_sge=1, sg=[self.sge(self.mr2, 0, 64)]))
        n = 0
        while n < 10 * max_wr:
            try:
                srq.post_recv(RecvWR(wr_id=100 + n, num_sge=1,
                                     sg=[self.sge(self.mr2, 64 * (n % 64), 64)]))
            except PyverbsRDMAError as ex:
                check(ex.error_code == errno.ENOMEM, f'errno {ex.error_code}')
                break
            n += 1
        check(n == max_wr, f'{n} receives fit an SRQ of {max_wr}')
        for rnd in range(3):
            for i in range(max_wr):
                (a if i % 2 else c).post_send(
                    SendWR(wr_id=1000 * rnd + i, num_sge=1,
                           sg=[self.sge(self.mr, 0, 32)]))
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
                                     sg=[self.sge(self.mr2, 0, 64)]))

    def test_srq_resize(self):
        """SRQ resize keeps the posted receives, in order, and takes more"""
        cq = CQ(self.ctx, 256)
        srq = SRQ(self.pd, SrqInitAttr(SrqAttr(max_wr=8, max_sge=1)))
        small = srq.query().max_wr
        a, b = self.rc_pair(cq, srq=srq)
        n = 4 * small

        def post(i):
            srq.post_recv(RecvWR(wr_id=500 + i, num_sge=1,
                                 sg=[self.sge(self.mr2, 64 * i, 64)]))

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
            self.mr.write(bytes([i]) * 32, 32, 64 * i)
            a.post_send(SendWR(wr_id=i, num_sge=1,
                               sg=[self.sge(self.mr, 64 * i, 32)]))
        wcs = poll(cq, 2 * n)
        for w in wcs:
            ok(w)
        recvs = [w.wr_id for w in wcs if w.opcode == e.IBV_WC_RECV]
        check(recvs == [500 + i for i in range(n)],
              f'receives completed as {recvs}')
        for i in range(n):
            check(self.mr2.read(32, 64 * i) == bytes([i]) * 32,
                  f'message {i} is not in receive {i}')

    def test_ud(self):
        """UD: AH, SEND with GRH and src_qp; RDMA on UD is EINVAL"""
        cq = CQ(self.ctx, 64)
        a = QP(self.pd, self.qp_init(e.IBV_QPT_UD, cq))
        b = QP(self.pd, self.qp_init(e.IBV_QPT_UD, cq))
        for qp in (a, b):
            attr = QPAttr(qp_state=e.IBV_QPS_INIT)
            attr.qkey = QKEY
            attr.pkey_index = 0
            attr.port_num = self.ib_port
            qp.to_rts(attr)
        ah = AH(self.pd, attr=self.ah_attr())
        self.recv(b, 80, 0, GRH + 512)
        self.mr.write(b'u' * 512, 512, 0)
        wr = SendWR(wr_id=81, num_sge=1, sg=[self.sge(self.mr, 0, 512)])
        wr.set_wr_ud(ah, b.qp_num, QKEY)
        a.post_send(wr)
        wcs = {w.wr_id: w for w in poll(cq, 2)}
        ok(wcs[81], e.IBV_WC_SEND)
        r = wcs[80]
        ok(r, e.IBV_WC_RECV)
        check(r.byte_len == GRH + 512, f'byte_len {r.byte_len}')
        check(r.src_qp == a.qp_num, f'src_qp {r.src_qp:#x}')
        check(r.wc_flags & e.IBV_WC_GRH, f'wc_flags {r.wc_flags:#x}')
        check(self.mr2.read(512, GRH) == b'u' * 512, 'data')
        # RDMA on UD is refused at post time.
        wr = SendWR(wr_id=82, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                    sg=[self.sge(self.mr, 0, 8)])
        expect_errno(errno.EINVAL, a.post_send, wr)

    def test_resize_cq(self):
        """resize_cq keeps the unpolled completions, in order"""
        cq = CQ(self.ctx, 8)
        a, b = self.rc_pair(cq)
        for i in range(6):
            wr = SendWR(wr_id=90 + i, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                        sg=[self.sge(self.mr, 0, 8)])
            wr.set_wr_rdma(self.mr2.rkey, self.mr2.buf)
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
                        sg=[self.sge(self.mr, 0, 8)])
            wr.set_wr_rdma(self.mr2.rkey, self.mr2.buf)
            a.post_send(wr)
        wcs = poll(cq, 40)
        check([w.wr_id for w in wcs] == list(range(200, 240)), 'after more')

    def test_events(self):
        """req_notify_cq and a completion channel deliver an event"""
        ch = CompChannel(self.ctx)
        cq = CQ(self.ctx, 16, None, ch, 0)
        a, b = self.rc_pair(cq)
        cq.req_notify()
        self.recv(b, 1, 0, 64)
        a.post_send(SendWR(wr_id=2, num_sge=1, sg=[self.sge(self.mr, 0, 8)]))
        wait_event(ch, cq)
        check(len(poll(cq, 2)) == 2, 'completions')
        # Armed for solicited only: an unsolicited SEND raises no event, a
        # solicited one does.
        cq.req_notify(True)
        self.recv(b, 3, 0, 64)
        self.recv(b, 5, 0, 64)
        a.post_send(SendWR(wr_id=4, num_sge=1, sg=[self.sge(self.mr, 0, 8)]))
        check(len(poll(cq, 2)) == 2, 'unsolicited completions')
        a.post_send(SendWR(wr_id=6, num_sge=1, sg=[self.sge(self.mr, 0, 8)],
                           send_flags=e.IBV_SEND_SIGNALED |
                           e.IBV_SEND_SOLICITED))
        wait_event(ch, cq)
        check(len(poll(cq, 2)) == 2, 'solicited completions')

    def test_many_qps(self):
        """64 QPs on 4 CQs, RC and UC, traffic on all of them"""
        cqs = [CQ(self.ctx, 512) for _ in range(4)]
        pairs = []
        for i in range(32):
            qt = e.IBV_QPT_RC if i % 2 else e.IBV_QPT_UC
            a = QP(self.pd, self.qp_init(qt, cqs[i % 4], cqs[(i + 1) % 4],
                                       send_wr=8, recv_wr=8))
            b = QP(self.pd, self.qp_init(qt, cqs[(i + 2) % 4], cqs[(i + 3) % 4],
                                       send_wr=8, recv_wr=8))
            self.connect(a, b)
            pairs.append((a, b))
        for rnd in range(3):
            for i, (a, b) in enumerate(pairs):
                self.recv(b, 10000 * rnd + i, 64 * i, 64)
                a.post_send(SendWR(wr_id=10000 * rnd + 100 + i, num_sge=1,
                                   sg=[self.sge(self.mr, 0, 64)]))
            total = 0
            end = time.monotonic() + 20
            while total < 2 * len(pairs) and time.monotonic() < end:
                for cq in cqs:
                    n, wcs = cq.poll(64)
                    for w in wcs:
                        ok(w)
                    total += n
            check(total == 2 * len(pairs), f'round {rnd}: {total} completions')
