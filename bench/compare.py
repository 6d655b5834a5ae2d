# SPDX-License-Identifier: Apache-2.0
"""
One report of the benchmark on several distros: tools/bench --distro all.

Arguments: the results directories of one run per distro (each with its
latest.json or latest-quick.json). Prints every distro's full table, then
each target side by side with its verdict per distro.
"""

import json
import pathlib
import sys

import report


def load(directory):
    """Return the newest result (full before quick) in a results directory."""
    for name in ('latest.json', 'latest-quick.json'):
        path = pathlib.Path(directory) / name
        if path.exists():
            return json.loads(path.read_text())
    raise SystemExit('no benchmark result in %s' % directory)


def side_by_side(results):
    """Return the lines of the targets table with one measured/verdict column per distro."""
    distros = [result['machine']['ros_distro'] for result in results]
    lines = ['%-76s %s  %s' % ('target', '  '.join('%-15s' % name for name in distros), 'limit')]
    by_id = [{target['id']: target for target in result['targets']} for result in results]
    for target in results[0]['targets']:
        cells = []
        for targets in by_id:
            measured = targets.get(target['id'])
            if measured is None or measured['measured'] is None:
                # An older result, or a figure that run could not measure.
                cells.append('%-15s' % 'not measured')
                continue
            cells.append('%-15s' % ('%.2f %s' % (measured['measured'], measured['verdict'])))
        lines.append('%-76s %s  %g %s' % (
            target['description'], '  '.join(cells), target['limit'], target['unit']))
    return lines


def main(argv):
    """Print the combined report of the results directories in argv."""
    if not argv:
        raise SystemExit('usage: compare.py RESULTS_DIR [RESULTS_DIR...]')
    results = [load(directory) for directory in argv]
    for result in results:
        print(report.format_table(result))
        print()
    print('targets side by side (judged on the %s store of each run):' % report.TARGET_STORE)
    print('\n'.join(side_by_side(results)))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
