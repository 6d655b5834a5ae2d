# SPDX-License-Identifier: Apache-2.0
"""
Off-robot replication of the memory database with Litestream (docs/storage.md).

target.py checks replica_url and renders Litestream's configuration;
supervisor.py runs Litestream as the node's supervised child and lets a
forget's WAL truncation through; replica_files.py probes a replica at
start-up and wipes it after a forget (s3.py makes the S3 calls for an s3
replica); status.py turns Litestream's log
into the health on /diagnostics; restore.py brings a database back.
"""
