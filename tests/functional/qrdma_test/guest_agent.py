# SPDX-License-Identifier: GPL-2.0-or-later
"""The guest's end of the harness's command channel: it runs what the host
sends it, and asks the host for nothing.

The harness boots the guest with a script that loads virtio_console and
runs this file from the checkout's share (qrdma_test/machine.py); it is
the guest's only script, so the guest powers off when it exits.  The
guest's python3 and its standard library only.

The channel is the virtio-serial port org.qrdma.agent, one JSON object a
line each way.  The agent first says {"event": "hello", "boot_id": ID},
and again after every boot (a reset reboots the guest, and the host knows
it by the new boot_id).  Every request {"id": N, "op": OP, ...} gets one
reply {"id": N, "ok": true, ...}, or {"id": N, "ok": false, "error": WHY}:

  spawn argv env timeout label
                           start argv in a session of its own (stdin
                           /dev/null, stdout and stderr to one file), the
                           agent's environment with env added; after
                           timeout seconds the agent kills the whole
                           session, whatever the host does: -> job.  The
                           console names it by label (argv if null)
  wait job timeout pattern until the job has ended, or its output so far
                           matches pattern (a regular expression, each
                           line a ^...$, or null), or timeout seconds have
                           passed: -> done, rc (a shell's: 128 + N for
                           signal N), timed_out (the agent killed it),
                           matched, output (its last OUTPUT_MAX bytes)
  signal job signum        the signal to the job's session
  ping                     -> uptime

One request at a time: a wait holds the channel for its timeout at most,
and a job's own timeout bounds it whatever the channel does.
"""

import json
import os
import re
import select
import signal
import subprocess
import sys
import time

PORT_NAME = 'org.qrdma.agent'
JOB_DIR = '/run/qrdma-agent'
# What a wait returns of a job's output; all of it stays in JOB_DIR.
OUTPUT_MAX = 256 * 1024
# How often a wait looks at its job, and the loop at its jobs' deadlines.
POLL_S = 0.1


def log(text):
    """A line on the console, which the host keeps in the VM's log."""
    print(f'qrdma-agent: {text}', flush=True)


def uptime():
    with open('/proc/uptime', encoding='ascii') as f:
        return float(f.read().split()[0])


def find_port(timeout):
    """The port's device node: devtmpfs makes it once virtio_console has
    found the port (there is no udev for /dev/virtio-ports/ names)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        base = '/sys/class/virtio-ports'
        for port in os.listdir(base) if os.path.isdir(base) else []:
            try:
                with open(f'{base}/{port}/name', encoding='ascii') as f:
                    name = f.read().strip()
            except OSError:
                continue
            if name == PORT_NAME and os.path.exists(f'/dev/{port}'):
                return f'/dev/{port}'
        time.sleep(POLL_S)
    raise RuntimeError(f'no virtio-serial port {PORT_NAME}')


class Job:
    """A command the host started, and its output file."""

    def __init__(self, number, argv, env, timeout, label):
        self.number = number
        self.path = f'{JOB_DIR}/{number}.out'
        self.timed_out = False
        self.start = time.monotonic()
        self.deadline = self.start + timeout
        with open(self.path, 'wb') as out:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, env={**os.environ, **env},
                cwd='/root', start_new_session=True)
        # One console line.
        label = ' '.join((label or ' '.join(argv)).split())
        log(f'job {number}: {label[:200]} (timeout {timeout} s)')

    def signal(self, signum):
        try:
            os.killpg(self.proc.pid, signum)
        except ProcessLookupError:
            pass

    def poll(self):
        """The exit status once the job has ended; kills it at its
        deadline."""
        rc = self.proc.poll()
        if rc is None and time.monotonic() > self.deadline:
            self.timed_out = True
            self.signal(signal.SIGKILL)
            rc = self.proc.wait()
            log(f'job {self.number}: killed at its timeout')
        return rc

    def output(self):
        with open(self.path, 'rb') as f:
            size = os.fstat(f.fileno()).st_size
            if size > OUTPUT_MAX:
                f.seek(size - OUTPUT_MAX)
            return f.read().decode('utf-8', 'replace')


class Agent:
    """The requests of the host, and the jobs they started."""

    def __init__(self, fd):
        self.fd = fd
        self.jobs = {}
        self.next_job = 1

    def send(self, msg):
        data = (json.dumps(msg) + '\n').encode()
        while data:
            data = data[os.write(self.fd, data):]

    def reap(self):
        """Every job's deadline kept, and every ended one reaped."""
        for job in self.jobs.values():
            if job.proc.returncode is None:
                job.poll()

    def op_spawn(self, argv, env, timeout, label=None):
        job = Job(self.next_job, argv, env or {}, timeout, label)
        self.jobs[job.number] = job
        self.next_job += 1
        return {'job': job.number}

    def op_wait(self, job, timeout, pattern=None):
        job = self.jobs[job]
        end = time.monotonic() + timeout
        regex = re.compile(pattern, re.M) if pattern else None
        matched = False
        while True:
            rc = job.poll()
            if regex and regex.search(job.output()):
                matched = True
            if rc is not None or matched or time.monotonic() >= end:
                break
            self.reap()
            time.sleep(POLL_S)
        if rc is not None:
            rc = 128 - rc if rc < 0 else rc
            log(f'job {job.number}: exit {rc} after '
                f'{time.monotonic() - job.start:.1f} s')
        return {'done': rc is not None, 'rc': rc, 'timed_out': job.timed_out,
                'matched': matched, 'output': job.output()}

    def op_signal(self, job, signum):
        self.jobs[job].signal(signum)
        return {}

    @staticmethod
    def op_ping():
        return {'uptime': uptime()}

    def handle(self, line):
        try:
            req = json.loads(line)
            rid = req.pop('id')
            handler = getattr(self, 'op_' + req.pop('op'))
        except (ValueError, KeyError, AttributeError, TypeError) as exc:
            log(f'bad request {line[:200]!r}: {exc!r}')
            return
        try:
            reply = {'id': rid, 'ok': True, **handler(**req)}
        except Exception as exc:    # pylint: disable=broad-except
            reply = {'id': rid, 'ok': False, 'error': repr(exc)}
        self.send(reply)

    def serve(self):
        buf = b''
        while True:
            ready, _, _ = select.select([self.fd], [], [], POLL_S)
            self.reap()
            if not ready:
                continue
            data = os.read(self.fd, 65536)
            if not data:
                # No host on the other end (yet): a port reads empty.
                time.sleep(POLL_S)
                continue
            buf += data
            while b'\n' in buf:
                line, buf = buf.split(b'\n', 1)
                if line.strip():
                    self.handle(line.decode('utf-8', 'replace'))


def main():
    os.makedirs(JOB_DIR, exist_ok=True)
    port = find_port(30)
    fd = os.open(port, os.O_RDWR)
    with open('/proc/sys/kernel/random/boot_id', encoding='ascii') as f:
        boot_id = f.read().strip()
    agent = Agent(fd)
    agent.send({'event': 'hello', 'boot_id': boot_id, 'uptime': uptime()})
    log(f'serving on {port} ({PORT_NAME}), boot {boot_id}')
    agent.serve()


if __name__ == '__main__':
    sys.exit(main())
