# SPDX-License-Identifier: Apache-2.0
"""Raw-byte scans of a database's files, for the tests that forget must leave no copy."""


def database_files(path):
    """Return every file of the database: main, -wal and -shm (those that exist)."""
    return [candidate for candidate in (path, path.with_name(path.name + '-wal'),
                                        path.with_name(path.name + '-shm'))
            if candidate.exists()]


def raw_hits(path, secrets):
    """Return (file name, secret) for each secret found in any database file, any case."""
    hits = []
    for candidate in database_files(path):
        data = candidate.read_bytes()
        for secret in secrets:
            for form in {secret, secret.casefold(), secret.upper()}:
                if form.encode('utf-8') in data:
                    hits.append((candidate.name, form))
    return hits
