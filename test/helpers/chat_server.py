# SPDX-License-Identifier: Apache-2.0
"""
A scripted chat-completions server on 127.0.0.1 for the model backend tests.

Real HTTP (stdlib http.server in a thread, an ephemeral port), so the openai
client library runs unmodified. Each POST to /v1/chat/completions takes the
next scripted answer and records the request body and headers; a request
with nothing scripted left gets HTTP 500, which the runtime must report as
"the model is unavailable".
"""

import collections
import http.server
import itertools
import json
import os
import socket
import threading
import time

# Nothing the tests start may go through a proxy: only loopback is spoken to.
LOOPBACK_ENV = {'NO_PROXY': '*', 'no_proxy': '*', 'HTTP_PROXY': '', 'HTTPS_PROXY': '',
                'http_proxy': '', 'https_proxy': '', 'ALL_PROXY': '', 'all_proxy': ''}

_ids = itertools.count(1)


def no_proxies():
    """Clear proxy settings in this process (and so in the processes it starts)."""
    os.environ.update(LOOPBACK_ENV)


def _completion(message, finish_reason):
    return {
        'id': f'chatcmpl-{next(_ids)}', 'object': 'chat.completion', 'created': 1,
        'model': 'scripted-test-model',
        'choices': [{'index': 0, 'message': message, 'finish_reason': finish_reason}],
        'usage': {'prompt_tokens': 1, 'completion_tokens': 1, 'total_tokens': 2},
    }


def text(content):
    """Return a completion whose message is assistant text."""
    return _completion({'role': 'assistant', 'content': content}, 'stop')


def refusal(content):
    """Return a completion whose message is a refusal, with no content."""
    return _completion(
        {'role': 'assistant', 'content': None, 'refusal': content}, 'stop')


def tool_calls(*calls):
    """Return a completion calling tools; each call is (name, arguments: dict or text)."""
    return _completion({'role': 'assistant', 'content': None, 'tool_calls': [
        {'id': f'call_{next(_ids)}', 'type': 'function',
         'function': {'name': name,
                      'arguments': args if isinstance(args, str) else json.dumps(args)}}
        for name, args in calls]}, 'tool_calls')


class Status:
    """An HTTP error answer."""

    def __init__(self, code, body=None, headers=None):
        self.code = code
        self.body = body or {'error': {'message': 'scripted failure', 'type': 'server_error'}}
        self.headers = headers or {}


class Raw:
    """A 200 answer whose body is this text (for malformed responses)."""

    def __init__(self, body):
        self.body = body


class Hang:
    """Answer only after this many seconds (longer than the client's timeout)."""

    def __init__(self, seconds):
        self.seconds = seconds


class ChatServer:
    """The server; `script(...)` queues answers, `requests` holds what arrived."""

    def __init__(self):
        self.requests = []
        self._answers = collections.deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's naming)
                length = int(self.headers.get('Content-Length', 0))
                body = self.rfile.read(length)
                with server._lock:
                    server.requests.append({
                        'path': self.path,
                        'headers': {k.lower(): v for k, v in self.headers.items()},
                        'body': json.loads(body)})
                    answer = server._answers.popleft() if server._answers else Status(500)
                if self.path != '/v1/chat/completions':
                    answer = Status(404)
                if isinstance(answer, Hang):
                    server._stop.wait(answer.seconds)
                    answer = text('too late')
                if isinstance(answer, Status):
                    self._send(answer.code, json.dumps(answer.body), answer.headers)
                elif isinstance(answer, Raw):
                    self._send(200, answer.body)
                else:
                    self._send(200, json.dumps(answer))

            def _send(self, code, body, headers=None):
                data = body.encode('utf-8')
                try:
                    self.send_response(code)
                    self.send_header('Content-Type', 'application/json')
                    self.send_header('Content-Length', str(len(data)))
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

            def log_message(self, *args):
                pass

        self._server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.base_url = f'http://127.0.0.1:{self.port}/v1'
        # shutdown() waits for the serving loop's next poll: 0.5 s by default,
        # which every test paid once at its end.
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={'poll_interval': 0.02}, daemon=True)
        self._thread.start()

    def script(self, *answers):
        """Queue answers for the next requests, in order."""
        with self._lock:
            self._answers.extend(answers)

    def bodies(self):
        """Return the JSON bodies received so far."""
        with self._lock:
            return [request['body'] for request in self.requests]

    def wait_for_requests(self, count, timeout=60.0):
        """Wait until count requests arrived; return the bodies."""
        deadline = time.monotonic() + timeout
        while len(self.requests) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f'{len(self.requests)} of {count} model requests arrived')
            time.sleep(0.05)
        return self.bodies()

    def close(self):
        """Stop serving (hanging answers end at once)."""
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()


def closed_port_url():
    """Return a loopback base URL where nothing listens (connection refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(('127.0.0.1', 0))
        port = probe.getsockname()[1]
    return f'http://127.0.0.1:{port}/v1'
