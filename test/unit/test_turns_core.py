# SPDX-License-Identifier: Apache-2.0
"""The observed-turn window (core/admission/turns.py), without ROS and with a fake clock."""

from mira_memory.core.admission import turns
import pytest

SAID = 'Ada Lovelace prefers green tea.'


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock():
    return FakeClock()


def window(clock, max_turns=4, max_age_sec=60.0):
    return turns.TurnWindow(max_turns=max_turns, max_age_sec=max_age_sec, clock=clock)


def test_a_heard_turn_with_the_same_text_is_heard(clock):
    heard = window(clock)
    assert heard.observe('e1', 't1', SAID)
    assert heard.check('e1', 't1', SAID) == turns.HEARD


def test_a_turn_never_heard_is_not_heard(clock):
    heard = window(clock)
    heard.observe('e1', 't1', SAID)
    assert heard.check('e1', 't2', SAID) == turns.NOT_HEARD
    assert heard.check('e2', 't1', SAID) == turns.NOT_HEARD


@pytest.mark.parametrize('utterance', [
    SAID[:-1], SAID + ' ', SAID.lower(), SAID.replace(' ', '  ', 1), 'Ada Lovelace prefers '
    'green tea\uff0e', ''], ids=['shorter', 'trailing-space', 'case', 'whitespace',
                                 'fullwidth-stop', 'empty'])
def test_any_other_text_is_different_even_one_character(clock, utterance):
    heard = window(clock)
    heard.observe('e1', 't1', SAID)
    assert heard.check('e1', 't1', utterance) == turns.DIFFERENT


def test_the_oldest_turn_leaves_when_the_window_is_full(clock):
    heard = window(clock, max_turns=2)
    for number in (1, 2, 3):
        heard.observe('e1', f't{number}', SAID)
    assert [heard.check('e1', f't{number}', SAID) for number in (1, 2, 3)] == [
        turns.NOT_HEARD, turns.HEARD, turns.HEARD]
    assert len(heard) == 2


def test_a_turn_older_than_the_window_is_forgotten(clock):
    heard = window(clock, max_age_sec=60.0)
    heard.observe('e1', 't1', SAID)
    clock.now += 59.0
    heard.observe('e1', 't2', SAID)
    assert heard.check('e1', 't1', SAID) == turns.HEARD
    clock.now += 2.0
    assert heard.check('e1', 't1', SAID) == turns.NOT_HEARD
    assert heard.check('e1', 't2', SAID) == turns.HEARD
    assert len(heard) == 1


def test_a_turn_heard_again_replaces_the_text_and_is_new_again(clock):
    heard = window(clock, max_turns=2, max_age_sec=60.0)
    heard.observe('e1', 't1', 'First words.')
    clock.now += 50.0
    heard.observe('e1', 't2', SAID)
    heard.observe('e1', 't1', SAID)
    clock.now += 20.0
    heard.observe('e1', 't3', SAID)
    # t1 was first heard 70 s ago but again 20 s ago, after t2: t2 left first.
    assert heard.check('e1', 't1', 'First words.') == turns.DIFFERENT
    assert heard.check('e1', 't1', SAID) == turns.HEARD
    assert heard.check('e1', 't2', SAID) == turns.NOT_HEARD


@pytest.mark.parametrize('episode_id,turn_id,text', [
    ('', 't1', SAID), ('e1', '', SAID), ('e' * 65, 't1', SAID), ('e1', 't' * 65, SAID),
    ('e1', 't1', 'x' * 4001)], ids=['empty-episode', 'empty-turn', 'long-episode',
                                    'long-turn', 'long-text'])
def test_turns_that_could_never_be_admitted_are_not_kept(clock, episode_id, turn_id, text):
    heard = window(clock)
    assert not heard.observe(episode_id, turn_id, text)
    assert len(heard) == 0
    assert heard.check(episode_id, turn_id, text) == turns.NOT_HEARD


def test_bounds_of_what_is_kept_are_admissions_own():
    heard = turns.TurnWindow()
    assert heard.observe('e' * 64, 't' * 64, 'x' * 4000)
    assert (heard.max_turns, heard.max_age_sec) == (256, 900.0)


@pytest.mark.parametrize('max_turns,max_age_sec', [(0, 1.0), (True, 1.0), (1.5, 1.0), (1, 0.0),
                                                   (1, -1.0), (1, float('nan'))])
def test_window_bounds_must_be_positive(max_turns, max_age_sec):
    with pytest.raises(ValueError):
        turns.TurnWindow(max_turns=max_turns, max_age_sec=max_age_sec)
