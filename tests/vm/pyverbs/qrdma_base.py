# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""What the qrdma tests of rdma-core's suite share, as efa_base.py is for
EFA's: the device check that skips them on any other device, and a test
case holding a context, a PD and two MRs, with helpers to make QPs that
talk to each other over the device's loopback fabric.

The tests run from a copy of rdma-core's tests/ with this file and the
test modules beside its own (tests/vm/provider-semantics.sh puts them
there), under rdma-core's run_tests.py:

    run_tests.py --dev qrdma0 --gid GID_INDEX -v test_qrdma
"""

import errno
import time
import unittest

import pyverbs.enums as e
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, RecvWR

from tests.base import PyverbsAPITestCase

# hw-rdma/qrdma-hw.h: QRDMA_PCI_VENDOR_ID, QRDMA_PCI_DEVICE_ID, which the
# device reports as its vendor and part.
QRDMA_VENDOR_ID = 0x1af4
QRDMA_VENDOR_PART_ID = 0x10f0

QKEY = 0x11111111
ACCESS = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE |
          e.IBV_ACCESS_REMOTE_READ | e.IBV_ACCESS_REMOTE_ATOMIC)
MAX_SEND_SGE = 12
MAX_RECV_SGE = 7
MAX_INLINE = 192
GRH = 40


def is_qrdma_dev(ctx):
    attr = ctx.query_device()
    return (attr.vendor_id == QRDMA_VENDOR_ID and
            attr.vendor_part_id == QRDMA_VENDOR_PART_ID)


def skip_if_not_qrdma_dev(ctx):
    if not is_qrdma_dev(ctx):
        raise unittest.SkipTest('Can not run the test over non qrdma device')


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def expect_errno(code, fn, *args):
    """fn(*args) must fail with errno code."""
    try:
        fn(*args)
    except PyverbsRDMAError as ex:
        check(ex.error_code == code,
              f'expected {errno.errorcode[code]}, got {ex.error_code} ({ex})')
        return
    raise AssertionError(f'expected {errno.errorcode[code]}, it succeeded')


def poll(cq, n=1, timeout=10.0):
    """n completions of cq, or fail after timeout seconds."""
    wcs = []
    end = time.monotonic() + timeout
    while len(wcs) < n:
        _, got = cq.poll(n - len(wcs))
        wcs += got
        if len(wcs) < n and time.monotonic() > end:
            raise AssertionError(
                f'{len(wcs)} of {n} completions after {timeout} s: '
                + ', '.join(f'{w.wr_id}/{w.status}' for w in wcs))
    return wcs


def poll_none(cq, wait=0.3):
    """No completion shows up in wait seconds."""
    time.sleep(wait)
    n, wcs = cq.poll(16)
    check(n == 0, 'unexpected completions: '
          + ', '.join(f'wr_id {w.wr_id} qp {w.qp_num:#x} status {w.status}'
                      for w in wcs))


def ok(wc, opcode=None, wr_id=None):
    check(wc.status == e.IBV_WC_SUCCESS,
          f'wr_id {wc.wr_id}: status {wc.status} vendor_err {wc.vendor_err}')
    if opcode is not None:
        check(wc.opcode == opcode, f'wr_id {wc.wr_id}: opcode {wc.opcode}, '
              f'want {opcode}')
    if wr_id is not None:
        check(wc.wr_id == wr_id, f'wr_id {wc.wr_id}, want {wr_id}')


def to_state(qp, state):
    qp.modify(QPAttr(qp_state=state), e.IBV_QP_STATE)


class QrdmaAPITestCase(PyverbsAPITestCase):
    """A PD and two MRs on qrdma, and QPs of them made and connected."""

    def setUp(self):
        super().setUp()
        skip_if_not_qrdma_dev(self.ctx)
        self.pd = PD(self.ctx)
        self.gid = self.ctx.query_gid(self.ib_port, self.gid_index)
        self.mr = MR(self.pd, 1 << 16, ACCESS)
        self.mr2 = MR(self.pd, 1 << 16, ACCESS)

    def sge(self, mr, off, length):
        return SGE(mr.buf + off, length, mr.lkey)

    def ah_attr(self):
        gr = GlobalRoute(dgid=self.gid, sgid_index=self.gid_index,
                         hop_limit=64)
        return AHAttr(is_global=1, port_num=self.ib_port, gr=gr)

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
        attr.port_num = self.ib_port
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

    def recv(self, qp, wr_id, off, length, mr=None):
        qp.post_recv(RecvWR(wr_id=wr_id, num_sge=1,
                            sg=[self.sge(mr or self.mr2, off, length)]))
