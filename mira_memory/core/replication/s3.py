# SPDX-License-Identifier: Apache-2.0
"""
The few S3 calls the node makes itself: probe, versioning check, list, delete.

Litestream does the replicating; the node only needs to check a bucket at
start-up and to remove every object under the replica's prefix after a
forget (replica_files.py). That is five plain REST calls, signed with AWS
Signature Version 4 over urllib: no SDK to import into the node (boto3
costs about 0.5 s and 40 MB there), and any S3-compatible service (AWS,
MinIO, Ceph, Garage, ...) answers them the same way.

Credentials come from the environment only, the same variables Litestream
reads: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or Litestream's
LITESTREAM_ACCESS_KEY_ID / LITESTREAM_SECRET_ACCESS_KEY), and
AWS_SESSION_TOKEN for temporary keys. They never appear in a URL, a
parameter or a file this package writes.
"""

import datetime
import hashlib
import hmac
import os
import socket
import ssl
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ElementTree

REQUEST_TIMEOUT_SEC = 10.0
_EMPTY_SHA256 = hashlib.sha256(b'').hexdigest()
_UNRESERVED = '-_.~'
# Litestream 0.5 gives its S3 client an HTTP client of its own, which the AWS
# SDK refuses to combine with a custom CA bundle: every call fails.
UNUSABLE_VARIABLES = ('AWS_CA_BUNDLE',)


class S3Error(OSError):
    """An S3 call failed (one line: what was asked, what the service said)."""


def credentials(environ=None):
    """Return (access key id, secret key, session token) from the environment, or raise."""
    environ = os.environ if environ is None else environ
    for name in UNUSABLE_VARIABLES:
        if environ.get(name):
            raise S3Error(f'{name} is set, and Litestream 0.5 cannot replicate to S3 with it '
                          '(its client refuses a custom CA bundle); unset it and put the CA '
                          "into the system's trust store")
    key_id = environ.get('AWS_ACCESS_KEY_ID') or environ.get('LITESTREAM_ACCESS_KEY_ID')
    secret = (environ.get('AWS_SECRET_ACCESS_KEY')
              or environ.get('LITESTREAM_SECRET_ACCESS_KEY'))
    if not key_id or not secret:
        raise S3Error('an s3 replica needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the '
                      "node's environment (docs/storage.md#replication-and-restore)")
    return key_id, secret, environ.get('AWS_SESSION_TOKEN', '')


def signature_headers(method, url, headers, payload_sha256, key_id, secret, region, now,
                      session_token=''):
    """
    Return the headers that sign a request with AWS Signature Version 4 (service s3).

    headers are the request's own headers to sign besides host and the
    x-amz-* ones this adds; url's path and query must already be encoded.
    """
    parts = urllib.parse.urlsplit(url)
    amz_date = now.strftime('%Y%m%dT%H%M%SZ')
    day = amz_date[:8]
    signed = {name.lower(): ' '.join(str(value).split()) for name, value in headers.items()}
    signed.update({'host': parts.netloc, 'x-amz-date': amz_date,
                   'x-amz-content-sha256': payload_sha256})
    if session_token:
        signed['x-amz-security-token'] = session_token
    names = sorted(signed)
    query = sorted(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
    canonical_query = '&'.join(f'{_encode(name)}={_encode(value)}' for name, value in query)
    canonical = '\n'.join([
        method, parts.path or '/', canonical_query,
        ''.join(f'{name}:{signed[name]}\n' for name in names),
        ';'.join(names), payload_sha256])
    scope = f'{day}/{region}/s3/aws4_request'
    to_sign = '\n'.join(['AWS4-HMAC-SHA256', amz_date, scope,
                         hashlib.sha256(canonical.encode()).hexdigest()])
    key = f'AWS4{secret}'.encode()
    for part in (day, region, 's3', 'aws4_request'):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    result = {name: value for name, value in signed.items() if name != 'host'}
    result['authorization'] = (f'AWS4-HMAC-SHA256 Credential={key_id}/{scope}, '
                               f'SignedHeaders={";".join(names)}, Signature={signature}')
    return result


def _encode(text):
    return urllib.parse.quote(text, safe=_UNRESERVED)


class Bucket:
    """One bucket of an S3-compatible service, reached with the environment's credentials."""

    def __init__(self, bucket, region, endpoint='', environ=None):
        self.bucket = bucket
        self.region = region
        self._credentials = credentials(environ)
        if endpoint:
            # An explicit endpoint (MinIO, Ceph, ...) is addressed path-style,
            # as Litestream does (force-path-style).
            self._base = f'{endpoint.rstrip("/")}/{_encode(bucket)}'
        elif '.' in bucket:
            # A dotted name breaks the *.s3 certificate of a virtual host.
            self._base = f'https://s3.{region}.amazonaws.com/{_encode(bucket)}'
        else:
            self._base = f'https://{bucket}.s3.{region}.amazonaws.com'
        self._tls = ssl.create_default_context()

    def versioning(self):
        """Return the bucket's versioning status ('' when it was never enabled)."""
        body = self._request('GET', '', {'versioning': ''})
        status = _find(ElementTree.fromstring(body), 'Status')
        return status or ''

    def put(self, key, data):
        """Write one object."""
        self._request('PUT', key, {}, data)

    def delete(self, key):
        """Remove one object (S3 answers 204 whether or not it was there)."""
        self._request('DELETE', key, {})

    def keys(self, prefix):
        """Return the key of every object whose key starts with prefix."""
        found, token = [], ''
        while True:
            query = {'list-type': '2', 'prefix': prefix}
            if token:
                query['continuation-token'] = token
            root = ElementTree.fromstring(self._request('GET', '', query))
            found += [element.text for element in root.iter() if _local(element.tag) == 'Key']
            token = _find(root, 'NextContinuationToken')
            if _find(root, 'IsTruncated') != 'true' or not token:
                return found

    def _request(self, method, key, query, data=b''):
        path = self._base + ('/' + urllib.parse.quote(key, safe='/' + _UNRESERVED)
                             if key else '/')
        url = path + ('?' + '&'.join(f'{_encode(name)}={_encode(value)}' if value else name
                                     for name, value in sorted(query.items()))
                      if query else '')
        key_id, secret, token = self._credentials
        payload = hashlib.sha256(data).hexdigest() if data else _EMPTY_SHA256
        headers = signature_headers(method, url, {}, payload, key_id, secret, self.region,
                                    datetime.datetime.now(datetime.timezone.utc), token)
        request = urllib.request.Request(url, data=data if method == 'PUT' else None,
                                         headers=headers, method=method)
        what = f'{method} s3://{self.bucket}/{key}' + (f'?{next(iter(query))}' if query else '')
        try:
            with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_SEC,
                                        context=self._tls) as answer:
                return answer.read()
        except urllib.error.HTTPError as error:
            raise S3Error(f'{what}: {_service_error(error)}') from None
        except (urllib.error.URLError, socket.timeout, OSError) as error:
            reason = getattr(error, 'reason', error)
            raise S3Error(f'{what}: cannot reach {urllib.parse.urlsplit(url).netloc}: '
                          f'{reason}') from None


def _service_error(error):
    try:
        root = ElementTree.fromstring(error.read())
        code, message = _find(root, 'Code'), _find(root, 'Message')
    except ElementTree.ParseError:
        code = message = ''
    said = ': '.join(part for part in (code, message) if part)
    return f'HTTP {error.code}' + (f' {said}' if said else f' {error.reason}')


def _local(tag):
    return tag.rsplit('}', 1)[-1]


def _find(root, name):
    for element in root.iter():
        if _local(element.tag) == name:
            return (element.text or '').strip()
    return None
