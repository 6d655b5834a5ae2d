# SPDX-License-Identifier: Apache-2.0
"""
The operator turn is read once and kept nowhere.

One admission normalizes the utterance once, scans it for forbidden
characters once and locates the evidence in it once; after the call no
module-level cache of the process holds the utterance.
"""

import functools
import gc
import importlib
import pkgutil
import sys
import unicodedata

import mira_memory.core as core
from mira_memory.core.admission import normalize
from mira_memory.core.admission.operator_turn import Turn, TurnContext
from mira_memory.core.admission.proposal_rules import Proposal
from mira_memory.core.admission.rules import admit, judge
from mira_memory.core.admission.turn_proposals import TurnProposalLog
from mira_memory.core.store import MemoryStore
import pytest

UTTERANCE = 'By the way, Ada Lovelace really likes green tea, these days.'
EVIDENCE = 'Ada Lovelace really likes green tea'


@pytest.fixture
def store(tmp_path):
    with MemoryStore.open(tmp_path / 'memory.sqlite3') as opened:
        opened.add_entity('person', 'Ada Lovelace')
        yield opened


class _Counting:
    """Stands in for a module attribute and counts the calls that read the utterance."""

    def __init__(self, wrapped, counts, name, reads):
        self._wrapped, self._counts, self._name, self._reads = wrapped, counts, name, reads

    def __getattr__(self, attribute):
        original = getattr(self._wrapped, attribute)
        if not callable(original):
            return original

        def counted(*args, **kwargs):
            if self._reads(attribute, args):
                self._counts[self._name] += 1
            return original(*args, **kwargs)
        return counted


@pytest.fixture
def counts(monkeypatch):
    found = {'nfkc': 0, 'forbidden_scan': 0, 'evidence_located': 0}
    monkeypatch.setattr(normalize, 'unicodedata', _Counting(
        unicodedata, found, 'nfkc',
        lambda name, args: name == 'normalize' and args[0] == 'NFKC' and args[1] == UTTERANCE))
    monkeypatch.setattr(normalize, '_FORBIDDEN_OR_ASTRAL', _Counting(
        normalize._FORBIDDEN_OR_ASTRAL, found, 'forbidden_scan',
        lambda name, args: args and args[0] == UTTERANCE))
    original_find = normalize.find

    def find(needle, haystack, *window):
        if needle.display == EVIDENCE and haystack.display.startswith('By the way'):
            found['evidence_located'] += 1
        return original_find(needle, haystack, *window)
    for module in ('normalize', 'proposal_rules', 'verdict', 'text'):
        target = importlib.import_module(f'mira_memory.core.admission.{module}')
        if hasattr(target, 'find'):
            monkeypatch.setattr(target, 'find', find)
    return found


def test_one_admission_reads_the_utterance_once(store, counts):
    result = admit(store, TurnContext('e1', 't1', UTTERANCE),
                   Proposal('preference', 'Ada Lovelace', 'likes', 'green tea', None, None,
                            EVIDENCE), 'Mira')
    assert (result.status, result.outcome) == ('applied', 'created'), result
    assert counts == {'nfkc': 1, 'forbidden_scan': 1, 'evidence_located': 1}


def test_a_turn_built_at_the_boundary_is_not_read_again(store, counts):
    turn = Turn('e1', 't1', UTTERANCE)
    assert turn.analysis.display == UTTERANCE
    proposal = Proposal('preference', 'Ada Lovelace', 'likes', 'green tea', None, None, EVIDENCE)
    assert judge(store, turn, proposal, 'Mira').rejection is None
    assert admit(store, turn, proposal, 'Mira').outcome == 'created'
    assert counts == {'nfkc': 1, 'forbidden_scan': 1, 'evidence_located': 2}


def test_a_turn_with_forbidden_characters_is_refused_once_scanned(store):
    turn = Turn('e1', 't1', UTTERANCE.replace('really', 'real\u200bly'))
    result = admit(store, turn, Proposal('preference', 'Ada Lovelace', 'likes', 'green tea',
                                         None, None, 'Ada Lovelace'), 'Mira')
    assert (result.reason, result.rule) == ('evidence_not_in_utterance', '5')
    assert turn.folded is None


def _module_caches():
    """Yield (name, functools cache) of every module-level lru_cache of the core."""
    for info in pkgutil.walk_packages(core.__path__, 'mira_memory.core.'):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if hasattr(value, 'cache_info') and hasattr(value, '__wrapped__'):
                yield f'{info.name}.{name}', value


def _holds(value, canary, seen, depth=0):
    """Return True when value (or what it holds, a few levels down) contains canary."""
    if depth > 12 or id(value) in seen:
        return False
    seen.add(id(value))
    if isinstance(value, str):
        return canary in value
    if isinstance(value, dict):
        return any(_holds(key, canary, seen, depth + 1) or _holds(item, canary, seen, depth + 1)
                   for key, item in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(_holds(item, canary, seen, depth + 1) for item in value)
    slots = getattr(type(value), '__slots__', ())
    fields = getattr(value, '__dict__', {})
    return any(_holds(getattr(value, name, None), canary, seen, depth + 1) for name in slots) or (
        _holds(fields, canary, seen, depth + 1))


def test_no_module_cache_keeps_the_utterance_after_a_call(store):
    canary = 'Zanzibarquist'
    store.add_entity('person', canary)
    utterance = f'By the way, {canary} really likes green tea, these days.'
    for proposal in (
            Proposal('preference', canary, 'likes', 'green tea', None, None,
                     f'{canary} really likes green tea'),
            Proposal('preference', canary, 'likes_r', 'green tea', None, None,
                     f'Maybe {canary} really likes green tea')):
        admit(store, TurnContext('e1', f't{len(proposal.predicate)}', utterance), proposal,
              'Mira')
    caches = dict(_module_caches())
    assert caches, 'the core has module-level caches of language data: the search must see them'
    for name, cached in caches.items():
        # A functools cache keeps its keys and results in a dict the cache
        # function closes over: gc finds it among the cache's referents.
        referents = gc.get_referents(cached)
        assert not _holds(referents, canary, set()), f'{name} keeps operator text'
    # And no module attribute of the core (a dict, a list) holds it either.
    for module_name, module in list(sys.modules.items()):
        if module_name.startswith('mira_memory.core'):
            for name, value in vars(module).items():
                if isinstance(value, (dict, list, set)):
                    assert not _holds(value, canary, set()), f'{module_name}.{name}'


def test_the_turn_proposal_log_keeps_no_operator_words_of_a_refusal(store):
    canary = 'Zanzibarquist'
    store.add_entity('person', canary)
    log = TurnProposalLog()
    context = TurnContext('e1', 't1', f'Maybe {canary} likes green tea.')
    proposal = Proposal('preference', canary, 'likes', 'green tea', None, None,
                        f'{canary} likes green tea')
    result = log.answer(context, proposal, lambda: admit(store, context, proposal, 'Mira'))
    assert 'Maybe' in result.decided_by  # the caller (review) may still read it
    assert not _holds(log._turns, canary, set())
    assert not _holds(log._turns, 'Maybe', set())


def test_the_cache_search_finds_a_cache_that_keeps_text():
    # The check above must be able to fail.
    @functools.lru_cache(maxsize=4)
    def kept(text):
        return text.upper()
    kept('a turn with Zanzibarquist in it')
    assert _holds(gc.get_referents(kept), 'Zanzibarquist', set())
    assert not _holds(gc.get_referents(kept), 'Lovelace', set())


def test_a_turn_is_a_turn_context():
    assert isinstance(Turn('e', 't', 'u'), TurnContext)
