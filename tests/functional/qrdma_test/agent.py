# SPDX-License-Identifier: GPL-2.0-or-later
"""The host's end of the command channel to a guest's agent
(guest_agent.py says what goes over it).

Every call is bounded: a request waits for its reply for the time the
request itself may take and CHANNEL_GRACE more, then fails; a guest that
stops (its QEMU exits: the socket ends) or reboots (a new hello) fails the
request at once.
"""

import dataclasses
import json
import logging
import socket
import time
from typing import Optional

LOG = logging.getLogger('qrdma_test.agent')

# On top of what a request may take in the guest: a TCG guest under load
# answers late, but not this late.
CHANNEL_GRACE = 30.0
# On top of a job's timeout, for the agent to see it and kill it.
KILL_GRACE = 15.0


class AgentError(Exception):
    """The channel failed: no answer in time, or an error from the agent."""


class AgentLost(AgentError):
    """The agent that was asked will never answer: its VM stopped, or its
    guest booted again."""


@dataclasses.dataclass
class Result:
    """What a job did: rc is None while it runs; timed_out when the agent
    killed it at its timeout."""
    what: str
    rc: Optional[int]
    output: str
    elapsed: float
    timed_out: bool = False
    matched: bool = False

    @property
    def done(self):
        return self.rc is not None

    def info_lines(self):
        """Its lines that start with "INFO: ", without that."""
        return [line[6:] for line in self.output.splitlines()
                if line.startswith('INFO: ')]

    def figures(self):
        """(figure, value) of each of its "RESULT: FIGURE<tab>VALUE" lines
        (lib-pair.sh's pair_result)."""
        return [tuple(line[8:].split('\t', 1)) for line in self.output.splitlines()
                if line.startswith('RESULT: ') and '\t' in line]

    def describe(self):
        if self.rc is None:
            state = 'still running'
        elif self.timed_out:
            state = 'killed at its timeout'
        else:
            state = f'exit {self.rc}'
        return f'{self.what} ({state}, {self.elapsed:.1f} s)'


class Job:
    """A command running in the guest (Agent.spawn)."""

    def __init__(self, agent, number, what, timeout):
        self.agent = agent
        self.number = number
        self.what = what
        self.timeout = timeout
        self.start = time.monotonic()

    def wait(self, timeout, pattern=None):
        """Its Result once it has ended, or its output so far matches the
        regular expression pattern (re.M), or after timeout seconds,
        whichever comes first."""
        reply = self.agent.request('wait', takes=timeout, job=self.number,
                                   timeout=timeout, pattern=pattern)
        return Result(self.what, reply['rc'], reply['output'],
                      time.monotonic() - self.start, reply['timed_out'],
                      reply['matched'])

    def finish(self):
        """Its Result once it has ended: at its own timeout at the latest."""
        left = self.timeout - (time.monotonic() - self.start)
        return self.wait(max(left, 0) + KILL_GRACE)

    def signal(self, signum):
        self.agent.request('signal', job=self.number, signum=int(signum))


class Agent:
    """The channel to one guest's agent over a connected socket."""

    def __init__(self, sock, name):
        self.sock = sock
        self.name = name
        self.boot_id = None
        self._buf = b''
        self._next_id = 1

    def close(self):
        self.sock.close()

    def move_to(self, sock, timeout):
        """Carry on over sock, the channel of the QEMU a migration moved the
        guest to, once the old QEMU has exited.  The old socket is read to
        its end first, within timeout seconds: whatever that QEMU passed on
        from the guest before the guest stopped comes before what the new
        one passes on (a message cut in two ends there), and none of it is
        lost.  The guest's agent reads no request twice and misses none, as
        long as no request was unanswered at the migration: the agent had
        read all of each one it answered."""
        old = self.sock
        deadline = time.monotonic() + timeout
        drained = 0
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AgentError(f'{self.name}: the old QEMU\'s channel did not '
                                     f'end within {timeout} s of the migration')
                old.settimeout(left)
                try:
                    data = old.recv(65536)
                except socket.timeout:
                    continue
                except OSError:
                    break
                if not data:
                    break
                drained += len(data)
                self._buf += data
        finally:
            old.close()
            self.sock = sock
            LOG.debug('%s: the channel moved to the migration\'s destination '
                      '(%d bytes read from the source\'s after it stopped)',
                      self.name, drained)

    def _read(self, deadline):
        """The next message, or AgentError at the deadline."""
        while b'\n' not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AgentError(f'{self.name}: no answer from the agent in time')
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                continue
            except OSError as exc:
                raise AgentLost(f'{self.name}: the channel failed: {exc}') from exc
            if not data:
                raise AgentLost(f'{self.name}: the channel closed (QEMU exited)')
            self._buf += data
        line, self._buf = self._buf.split(b'\n', 1)
        try:
            return json.loads(line)
        except ValueError as exc:
            raise AgentError(f'{self.name}: not JSON from the agent: {line[:200]!r}') from exc

    def wait_hello(self, timeout):
        """Until the agent of a new boot says hello (any older message is
        dropped: its guest is gone); its hello."""
        deadline = time.monotonic() + timeout
        while True:
            msg = self._read(deadline)
            if msg.get('event') == 'hello' and msg['boot_id'] != self.boot_id:
                self.boot_id = msg['boot_id']
                LOG.debug('%s: hello, boot %s at %.1f s of uptime',
                          self.name, self.boot_id, msg['uptime'])
                return msg

    def request(self, op, *, takes=0.0, **args):
        """The reply of the agent to op with args, which takes seconds
        at most in the guest."""
        rid = self._next_id
        self._next_id += 1
        msg = {'id': rid, 'op': op, **args}
        LOG.debug('%s: -> %s', self.name, _shorten(msg))
        try:
            self.sock.sendall((json.dumps(msg) + '\n').encode())
        except OSError as exc:
            raise AgentLost(f'{self.name}: the channel failed: {exc}') from exc
        deadline = time.monotonic() + takes + CHANNEL_GRACE
        while True:
            reply = self._read(deadline)
            if reply.get('event') == 'hello':
                raise AgentLost(f'{self.name}: the guest booted again during {op}')
            if reply.get('id') == rid:
                break
        LOG.debug('%s: <- %s', self.name, _shorten(reply))
        if not reply['ok']:
            raise AgentError(f'{self.name}: {op}: {reply["error"]}')
        return reply

    def spawn(self, argv, timeout, env=None, what=None):
        """A Job running argv in the guest, killed after timeout seconds."""
        what = what or ' '.join(argv)
        reply = self.request('spawn', argv=list(argv), env=env or {},
                             timeout=timeout, label=what)
        return Job(self, reply['job'], what, timeout)


def _shorten(msg):
    text = json.dumps(msg)
    return text if len(text) < 2000 else text[:2000] + '...'
