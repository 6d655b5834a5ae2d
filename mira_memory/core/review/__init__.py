# SPDX-License-Identifier: Apache-2.0
"""
Supervised review: a refused proposal waits for a person instead of being lost.

keep.py keeps a refusal a person can judge (results.reviewable) for an
operator turn the node heard, in the store's bounded, expiring pending
table; decisions.py is what a person does with an item (accept, accept with
a new entity, supersede, dismiss) and what the rules say of it now. The
conversational path still never creates entities or supersedes: a person
does, through the admin services. docs/review.md.
"""
