# SPDX-License-Identifier: Apache-2.0
"""
The node's online verify in a child process, so judging never takes the serving process's GIL.

Why a process: a backup is SQLite's C code, which releases the GIL, so the
node's executor thread keeps serving at full speed beside it. A verify is
the grounding rules in Python: on a worker thread it held the GIL for most
of its run, and every recall or remember meanwhile waited for its turn at
each rcl and SQLite call (on the 1M bench store, remember p50 8.2 ms and
max 833 ms during a verify against 3.4 ms and 190 ms during a backup). In a
child the judging runs on another interpreter, at a lower CPU priority
(nice VERIFY_NICENESS), so on a busy machine the node's requests come first;
the node's copy-worker thread only waits on the child's output.

The child runs core.verify.verify on the same file, read-only through its
own snapshot connection, and writes one JSON line per finding (the first
findings_max of them: the node lists no more, and a store with 378,251
findings spent its time encoding, piping and decoding them), a progress line
every PROGRESS_SECONDS and one final line (the summary, or an error). It
judges with the rules data its interpreter loads, which must be the node's:
run() passes the node's rules digest, and a child that loaded other data
(the files changed on disk since the node started) refuses to judge rather
than answer for rules the node does not run. The child stops when it is
asked to (the parent kills it) and when its parent is gone.
"""

import argparse
import dataclasses
import json
import os
import pathlib
import selectors
import subprocess
import sys
import time

from mira_memory.core.admission import language
from mira_memory.core.archive import copies, verify
from mira_memory.core.archive.progress import Progress
from mira_memory.core.errors import BackendError, InvalidInputError, NotFoundError

# The child's niceness: below the node (0), so its judging yields the CPU.
VERIFY_NICENESS = 10
# How often the parent looks at should_stop while the child works.
_POLL_SECONDS = 0.2
# How often the child reports its progress.
PROGRESS_SECONDS = 0.25
# How long a child that sent its last line may take to exit before it is killed.
_EXIT_SECONDS = 5.0
# Errors that cross the process boundary by name, to be raised as themselves.
_ERRORS = {'not_found': NotFoundError, 'invalid_input': InvalidInputError,
           'backend': BackendError}
_PACKAGE_ROOT = str(pathlib.Path(__file__).resolve().parents[2])


def _never():
    return False


def _ignore(progress):
    return None


def run(source, memory_ids=(), *, on_finding=None, should_stop=_never, on_pending=None,
        progress=_ignore, findings_max=None):
    """
    Verify the database at source in a child process; return verify.Summary.

    Same contract as core.verify.verify: on_finding(Finding) per memory that
    is not OK, in id order (the first findings_max of them when given; the
    summary's counts are exact either way); on_pending(PendingFinding) per
    pending item; NotFoundError for an id that does not exist;
    CopyStoppedError when should_stop() turns True (the child is killed);
    progress(Progress) every PROGRESS_SECONDS.
    """
    on_finding = on_finding or (lambda finding: None)
    on_pending = on_pending or (lambda finding: None)
    argv = [sys.executable, '-m', 'mira_memory.core.archive.verify_process',
            '--database', str(source), '--rules-digest', language.rules_digest(),
            *(['--findings-max', str(findings_max)] if findings_max is not None else []),
            *(str(i) for i in memory_ids)]
    env = dict(os.environ)
    # The child imports this very package, wherever the parent found it.
    env['PYTHONPATH'] = os.pathsep.join(
        part for part in (_PACKAGE_ROOT, env.get('PYTHONPATH', '')) if part)
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env)
    answered = False
    try:
        for message in _messages(child, should_stop):
            if 'finding' in message:
                on_finding(verify.Finding(**message['finding']))
                continue
            if 'pending' in message:
                found = message['pending']
                on_pending(verify.PendingFinding(**dict(
                    found, memory_ids=tuple(found['memory_ids']))))
                continue
            if 'progress' in message:
                progress(Progress(*message['progress']))
                continue
            answered = True
            if 'summary' in message:
                return verify.Summary(**message['summary'])
            raise _ERRORS[message['error']](message['message'])
        raise BackendError(f'verify failed: its process ended with exit code {child.wait()} '
                           'before it answered (see the node log)')
    finally:
        _end(child, answered)


def _end(child, answered):
    """Let a child that answered exit by itself (briefly); kill one that was stopped."""
    if answered:
        try:
            child.wait(timeout=_EXIT_SECONDS)
        except subprocess.TimeoutExpired:
            pass
    if child.poll() is None:
        child.kill()
    child.wait()
    child.stdout.close()


def _messages(child, should_stop):
    """Yield the child's JSON lines as they arrive; CopyStoppedError when should_stop()."""
    pending = b''
    with selectors.DefaultSelector() as selector:
        selector.register(child.stdout, selectors.EVENT_READ)
        while True:
            if should_stop():
                raise copies.CopyStoppedError('verify stopped before it was complete')
            if not selector.select(_POLL_SECONDS):
                continue
            chunk = os.read(child.stdout.fileno(), 65536)
            if not chunk:
                return
            pending += chunk
            *lines, pending = pending.split(b'\n')
            for line in lines:
                yield json.loads(line)


def main(argv=None):
    """Run as the child: verify the file, one JSON line per finding and a final line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument('--database', required=True)
    parser.add_argument('--rules-digest', required=True)
    parser.add_argument('--findings-max', type=int)
    parser.add_argument('memory_ids', nargs='*', type=int)
    args = parser.parse_args(argv)
    os.nice(VERIFY_NICENESS)
    parent = os.getppid()
    out = sys.stdout

    def send(message):
        out.write(json.dumps(message) + '\n')
        out.flush()

    sent = [0]

    def finding(found):
        if args.findings_max is None or sent[0] < args.findings_max:
            sent[0] += 1
            send({'finding': dataclasses.asdict(found)})

    last = [0.0]

    def report(progress):
        now = time.monotonic()
        if now - last[0] >= PROGRESS_SECONDS or progress.done == progress.total:
            last[0] = now
            send({'progress': dataclasses.astuple(progress)})

    def pending(found):
        send({'pending': dataclasses.asdict(found)})

    try:
        if language.rules_digest() != args.rules_digest:
            raise BackendError(
                f'the grounding language data changed on disk since the node started '
                f'(node {args.rules_digest}, on disk {language.rules_digest()}); restart the '
                'node to verify with the rules it admits with')
        summary = verify.verify(args.database, args.memory_ids, on_finding=finding,
                                should_stop=lambda: os.getppid() != parent, on_pending=pending,
                                progress=report)
    except NotFoundError as error:
        send({'error': 'not_found', 'message': str(error)})
    except InvalidInputError as error:
        send({'error': 'invalid_input', 'message': str(error)})
    except (BackendError, copies.CopyStoppedError) as error:
        send({'error': 'backend', 'message': str(error)})
    else:
        send({'summary': dataclasses.asdict(summary)})
    return 0


if __name__ == '__main__':
    sys.exit(main())
