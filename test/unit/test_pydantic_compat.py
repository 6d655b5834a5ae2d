# SPDX-License-Identifier: Apache-2.0
"""The boundary models' pydantic: the v1 API on 1.10 and 2.x, and errors as one line."""

from typing import List

from mira_memory.core import pydantic_compat
from mira_memory.core.pydantic_compat import Model, one_line, StrictBool, StrictStr
from mira_memory.core.pydantic_compat import ValidationError
import pydantic
import pytest

SECRET = 'Zyxwv-sentinel'


class _Turn(Model):
    id: StrictStr  # noqa: A003
    text: StrictStr


class _Episode(Model):
    name: StrictStr
    turns: List[_Turn] = []


class _File(Model):
    flag: StrictBool = False
    episodes: List[_Episode] = []


def error_of(data):
    with pytest.raises(ValidationError) as caught:
        _File.parse_obj(data)
    return caught.value


def test_the_v1_api_is_used_whichever_pydantic_is_installed():
    # 2.x keeps 1.x as pydantic.v1; 1.10 (Ubuntu 24.04's) is 1.x itself.
    assert pydantic_compat.pydantic.VERSION.startswith('1.')
    if pydantic.VERSION.startswith('2.'):
        assert pydantic_compat.pydantic.__name__ == 'pydantic.v1'
    else:
        assert pydantic_compat.pydantic is pydantic


def test_models_do_not_coerce():
    assert one_line(error_of({'flag': 'true'})) == 'flag must be true or false'
    assert one_line(error_of({'episodes': [{'name': 5}]})) == 'episodes[0].name must be a string'


def test_models_are_immutable():
    turn = _Turn(id='t1', text='Hello.')
    with pytest.raises(TypeError):
        turn.text = 'changed'


def test_a_nested_field_is_named_by_its_path():
    data = {'episodes': [{'name': 'e1', 'turns': [{'id': 't1', 'text': 'a'}, {'id': 't2'}]}]}
    assert one_line(error_of(data)) == 'episodes[0].turns[1].text is required'


def test_unknown_keys_of_one_table_are_named_together_never_their_values():
    data = {'episodes': [{'name': 'e1', 'zeta': SECRET, 'alpha': SECRET}]}
    assert one_line(error_of(data)) == 'episodes[0]: unknown key(s): alpha, zeta'
    assert one_line(error_of({'x': 1})) == 'unknown key(s): x'


def test_the_message_never_repeats_the_input():
    for data in ({'flag': SECRET}, {'episodes': [{'name': ['x', SECRET]}]},
                 {'episodes': SECRET}):
        assert SECRET not in one_line(error_of(data))


def test_a_boundary_can_word_a_type_its_own_way_and_name_its_places():
    message = one_line(error_of({'episodes': [{'name': 7}]}),
                       phrases={'type_error.str': 'must be text'},
                       place=lambda location: '<%s>' % pydantic_compat.path(location))
    assert message == '<episodes[0].name> must be text'
