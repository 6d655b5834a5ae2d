# SPDX-License-Identifier: Apache-2.0
"""The memory node's health report (ROS-free): levels, windows, counts."""

from mira_memory.core.store import health


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def report(state, **kwargs):
    arguments = {'enabled': True, 'database_path': '/db/memory.sqlite3', 'schema_version': 1,
                 'file_sizes': (4096, None)}
    arguments.update(kwargs)
    result = state.report(**arguments)
    return result, dict(result.values)


def test_percentiles_are_nearest_rank():
    values = sorted(float(n) for n in range(1, 101))
    assert health.percentile(values, 0.50) == 50.0
    assert health.percentile(values, 0.99) == 99.0
    assert health.percentile([7.0], 0.99) == 7.0
    assert health.percentile([], 0.5) is None


def test_latency_window_forgets_calls_older_than_a_minute():
    clock = FakeClock()
    state = health.Health(clock)
    state.recall.add(0.004)
    clock.now += 30
    state.recall.add(0.002)
    _, values = report(state)
    assert values['recall calls last minute'] == '2'
    assert values['recall p99 ms last minute'] == '4.000'
    clock.now += 31
    _, values = report(state)
    assert values['recall calls last minute'] == '1'
    assert values['recall p50 ms last minute'] == '2.000'
    assert values['remember p50 ms last minute'] == '-'


def test_failures_in_the_last_minute_warn_then_clear():
    clock = FakeClock()
    state = health.Health(clock)
    state.remember_failures.add()
    result, values = report(state)
    assert result.level == health.LEVEL_WARN
    assert values['remember backend_failure total'] == '1'
    clock.now += 61
    result, values = report(state)
    assert result.level == health.LEVEL_OK
    assert values['remember backend_failure last minute'] == '0'
    assert values['remember backend_failure total'] == '1'


def test_a_lost_database_is_an_error_recorded_once():
    state = health.Health()
    assert state.lose_database('/db/memory.sqlite3 was removed')
    assert not state.lose_database('again')
    result, values = report(state, file_sizes=(None, None))
    assert result.level == health.LEVEL_ERROR
    assert '/db/memory.sqlite3 was removed' in result.message
    assert values['file size bytes'] == 'missing'


def test_stopped_writes_are_an_error_recorded_once():
    state = health.Health()
    _, values = report(state)
    assert values['writes stopped'] == 'no'
    assert state.stop_writes('SQLite failed during commit: disk I/O error')
    assert not state.stop_writes('again')
    result, values = report(state)
    assert result.level == health.LEVEL_ERROR
    assert 'disk I/O error' in result.message and 'reads go on' in result.message
    assert values['writes stopped'] == 'SQLite failed during commit: disk I/O error'


def test_counts_start_from_a_full_count_and_follow_the_writes():
    state = health.Health()
    state.wrote(entities=1)
    _, values = report(state)
    assert values['entities'] == 'unknown'
    state.set_counts({'entities': 3, 'aliases': 1, 'memories': 5, 'active_memories': 4,
                      'links': 9, 'payloads': 5})
    state.wrote(entities=1)
    state.wrote(memories=1, active_memories=1)
    _, values = report(state)
    assert (values['entities'], values['aliases'], values['memories'],
            values['active memories']) == ('4', '1', '6', '5')


def test_disabled_reports_ok_with_extra_values():
    result = health.Health().report(enabled=False, extra_values=(('observed turns', '0'),))
    assert result.level == health.LEVEL_OK
    assert dict(result.values) == {'enabled': 'false', 'observed turns': '0'}
