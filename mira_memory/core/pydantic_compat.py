# SPDX-License-Identifier: Apache-2.0
"""
pydantic's v1 API on pydantic 1.10 and 2.x, and its errors as one line.

The data boundaries (the TOML config file, export records, scenario files,
the model's tool arguments) describe their input as pydantic models. rosdep
installs Ubuntu 24.04's python3-pydantic, 1.10.14; PyPI has 2.x, which keeps
the 1.x API as `pydantic.v1`. Every model here is written against that v1 API,
so one code path runs on both (the CI runs the boundary tests under 1.10 too).

Models are strict: no coercion (a 5 is not the string "5", a "true" is not
a bool), no unknown keys unless a model says so, and immutable. Their errors go through one_line,
which names the field by its path (episodes[0].turns[1].text) and never
repeats the input value: a refusal may reach a log or the model, and the
input may be personal.
"""

try:
    # pydantic 2.x (and 1.10.17 and later) ship the 1.x API as pydantic.v1.
    from pydantic import v1 as pydantic
except ImportError:  # pydantic 1.10 before 1.10.17, as on Ubuntu 24.04
    import pydantic

BaseModel = pydantic.BaseModel
Field = pydantic.Field
StrictBool = pydantic.StrictBool
StrictInt = pydantic.StrictInt
StrictStr = pydantic.StrictStr
ValidationError = pydantic.ValidationError
root_validator = pydantic.root_validator
validator = pydantic.validator


class Model(BaseModel):
    """A strict, immutable boundary model: unknown keys and coercion are errors."""

    class Config:
        extra = pydantic.Extra.forbid
        allow_mutation = False


# Phrases for pydantic's own error types; a validator's ValueError text is
# already a phrase ("must be a lowercase token ...") and is used as it is.
PHRASES = {
    'value_error.missing': 'is required',
    'type_error.str': 'must be a string',
    'value_error.strictbool': 'must be true or false',
    'type_error.integer': 'must be an integer',
    'type_error.list': 'must be a list',
    'type_error.dict': 'must be a table',
    'type_error.none.not_allowed': 'must not be null',
}


def path(location):
    """Return a field location as text: ('episodes', 0, 'name') -> 'episodes[0].name'."""
    text = ''
    for part in location:
        if part == '__root__':  # a check of the whole table: the table is the place
            continue
        if isinstance(part, int):
            text += '[%d]' % part
        else:
            text += ('.' if text else '') + str(part)
    return text


def one_line(error, phrases=None, place=path):
    """
    Return a ValidationError's first error as one line: "<field> <phrase>".

    pydantic lists a table's field errors in field order, then its unknown
    keys; the unknown keys of one table are reported together, under that
    table ("seed: unknown key(s): a, b"). phrases overrides PHRASES for one
    boundary (an export record's string is "text"); place names a field
    location (path by default).
    """
    table = dict(PHRASES, **(phrases or {}))
    errors = error.errors()
    first = errors[0]
    if first['type'] == 'value_error.extra':
        parent = first['loc'][:-1]
        names = sorted(str(e['loc'][-1]) for e in errors
                       if e['type'] == 'value_error.extra' and e['loc'][:-1] == parent)
        where = place(parent) if parent else ''
        return '%sunknown key(s): %s' % (where + ': ' if where else '', ', '.join(names))
    phrase = table.get(first['type'], first['msg'])
    where = place(first['loc'])
    return '%s %s' % (where, phrase) if where else phrase
