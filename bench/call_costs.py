# SPDX-License-Identifier: Apache-2.0
"""
Where the time of one call goes, measured in process without transport.

cost_breakdown() splits recall and remember into core, message building,
serialization and deserialization on the working copy; profile_summary()
reads the store node's cProfile dump of a --profile run.
"""

import pstats
import statistics
import time

from mira_memory.core import recall, store as store_module
from mira_memory.core.admission import operator_turn, proposal_rules, rules, turn_proposals
from mira_memory.memory import responses
from mira_memory.srv import RecallMemory, Remember
from rclpy.serialization import deserialize_message, serialize_message
from std_srvs.srv import Trigger
import workload


def _timed(function, samples):
    """Run function samples times; return (median microseconds, last result)."""
    times = []
    value = None
    for _ in range(samples):
        started = time.perf_counter_ns()
        value = function()
        times.append(time.perf_counter_ns() - started)
    return statistics.median(times) / 1000.0, value


def cost_breakdown(db_path, metadata, samples):
    """
    Split one call's node-side work into stages, in process, without transport.

    core: recall() or admit() (SQLite reads/writes plus rendering); of it,
    store_reads: the store calls recall makes; cached_core: the node's
    RecallCache answering a kept answer (what a repeated query costs while
    no write changed it); build: filling the response
    message (responses.py); serialize: rclpy's Python->C conversion and CDR
    serialization of the response (what send_response does); deserialize:
    the client's CDR->Python conversion. Medians in microseconds.
    """
    load = workload.Workload(metadata)
    result = {}
    with store_module.MemoryStore.open(db_path) as opened:
        reader = opened.open_reader()
        cache = recall.RecallCache(reader, opened)
        for series in ('recall_found', 'recall_ambiguous', 'recall_miss', 'recall_found_full'):
            request = load.request(series, 0)
            query = request.query
            core, outcome = _timed(lambda: recall.recall(reader, query), samples)
            cached, _ = _timed(lambda: cache.recall(query), samples)
            reads, _ = _timed(lambda: _recall_reads(reader, query), samples)
            result[series] = _message_stages(
                samples, core, RecallMemory.Response,
                lambda: responses.fill_recall(
                    RecallMemory.Response(), outcome, request.include_entities))
            result[series]['cached_core_us'] = cached
            result[series]['store_reads_us'] = reads
            result[series]['render_and_rest_us'] = core - reads
        remember = {}
        for series in ('remember_created', 'remember_duplicate', 'remember_rejected'):
            # Far beyond the measured run's numbers, so every created proposal is new.
            first = 10_000_000
            requests = [load.request(series, first + n) for n in range(samples)]
            remember[series] = iter(requests)
        for series, requests in remember.items():
            core, outcome = _timed(
                lambda: rules.admit(opened, *_proposal(next(requests)),
                                    metadata['robot_profile']), samples)
            result[series] = _message_stages(
                samples, core, Remember.Response,
                lambda: responses.fill_remember(Remember.Response(), outcome))
        # What the node does for a retry: TurnProposalLog answers it with the
        # turn's first answer, without admission.
        log = turn_proposals.TurnProposalLog()
        retries = [_proposal(load.request('remember_created', 20_000_000 + n))
                   for n in range(samples)]
        profile = metadata['robot_profile']
        for context, proposal in retries:
            log.answer(context, proposal,
                       lambda: rules.admit(opened, context, proposal, profile))
        retries = iter(retries)

        def retry():
            context, proposal = next(retries)
            return log.answer(context, proposal,
                              lambda: rules.admit(opened, context, proposal, profile))
        core, outcome = _timed(retry, samples)
        result['remember_retry'] = _message_stages(
            samples, core, Remember.Response,
            lambda: responses.fill_remember(Remember.Response(), outcome))
    result['trigger'] = _message_stages(samples, 0.0, Trigger.Response, Trigger.Response)
    return result


def _recall_reads(reader, query):
    matches = reader.find_entities(
        query, limit=recall.MAX_ENTITIES + 1, with_aliases=False)
    for entity in matches[:recall.MAX_ENTITIES]:
        reader.newest_active_memories(entity.id, recall.MAX_MEMORIES_PER_ENTITY)


def _proposal(request):
    context = operator_turn.TurnContext(
        episode_id=request.episode_id, turn_id=request.turn_id, utterance=request.utterance)
    proposal = proposal_rules.Proposal(
        kind=request.kind, subject=request.subject, predicate=request.predicate,
        value=request.value, related_entity=request.related_entity or None,
        related_role=request.related_role or None, evidence=request.evidence)
    return context, proposal


def _message_stages(samples, core_us, message_type, build):
    build_us, message = _timed(build, samples)
    serialize_us, data = _timed(lambda: serialize_message(message), samples)
    deserialize_us, _ = _timed(lambda: deserialize_message(data, message_type), samples)
    return {
        'core_us': core_us, 'build_us': build_us, 'serialize_us': serialize_us,
        'deserialize_us': deserialize_us, 'response_bytes': len(data),
        'node_side_us': core_us + build_us + serialize_us,
    }


def profile_summary(path, limit=25):
    """Return the top functions of a cProfile dump by own time, as text."""
    stream = _Capture()
    stats = pstats.Stats(str(path), stream=stream)
    stats.sort_stats('tottime').print_stats(limit)
    stats.sort_stats('cumulative').print_stats(limit)
    return stream.text()


class _Capture:
    """A minimal text stream for pstats."""

    def __init__(self):
        self._parts = []

    def write(self, text):
        self._parts.append(text)

    def text(self):
        return ''.join(self._parts)
