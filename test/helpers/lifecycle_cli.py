# SPDX-License-Identifier: Apache-2.0
"""
`ros2 lifecycle get/set/list` for the standalone environment, which has no ros2cli.

The same lifecycle_msgs calls ros2lifecycle makes (ros2/ros2cli
ros2lifecycle/verb/{get,set,list}.py): get calls <node>/get_state; set
calls <node>/get_available_transitions, picks the transition by label (or
id) and sends that transition (id and label) to <node>/change_state; list
prints the available transitions. The printed lines are ros2lifecycle's.
The tests call these functions; by hand, from a built environment:

    python3 test/helpers/lifecycle_cli.py set /mira/memory configure
"""

import sys

from lifecycle_msgs.srv import ChangeState, GetAvailableTransitions, GetState

CALL_TIMEOUT = 30.0


def get_state(ros, node_name):
    """Return the node's current state as (label, id)."""
    state = ros.call(GetState, f'{node_name}/get_state', timeout=CALL_TIMEOUT).current_state
    return state.label, state.id


def available_transitions(ros, node_name):
    """Return the node's available lifecycle_msgs TransitionDescriptions."""
    return ros.call(GetAvailableTransitions, f'{node_name}/get_available_transitions',
                    timeout=CALL_TIMEOUT).available_transitions


def set_state(ros, node_name, transition):
    """Request the transition (a label such as 'configure', or an id); return success."""
    available = [description.transition
                 for description in available_transitions(ros, node_name)]
    chosen = next((item for item in available if item.label == transition), None) or next(
        (item for item in available if str(item.id) == str(transition)), None)
    if chosen is None:
        raise ValueError('Unknown transition requested, available ones are:' + ''.join(
            f'\n- {item.label} [{item.id}]' for item in available))
    return ros.call(ChangeState, f'{node_name}/change_state',
                    ChangeState.Request(transition=chosen), timeout=CALL_TIMEOUT).success


def prepare(ros, node_name, timeout=60.0):
    """
    Create the lifecycle clients, then wait until get_state answers.

    The clients exist before the first answer, so the node has discovered
    their reply readers too by then (a change_state is never sent twice).
    """
    for service_type, service in ((ChangeState, 'change_state'),
                                  (GetAvailableTransitions, 'get_available_transitions')):
        ros.client(service_type, f'{node_name}/{service}')
    ros.settle(GetState, f'{node_name}/get_state', timeout=timeout)


def main(argv):
    from helpers.rosutil import RosClient
    verb, node_name, *rest = argv
    ros = RosClient()
    try:
        prepare(ros, node_name)
        if verb == 'get':
            print('%s [%d]' % get_state(ros, node_name))
        elif verb == 'list':
            for description in available_transitions(ros, node_name):
                print(f'- {description.transition.label} [{description.transition.id}]\n'
                      f'\tStart: {description.start_state.label}\n'
                      f'\tGoal: {description.goal_state.label}')
        elif verb == 'set':
            if not set_state(ros, node_name, rest[0]):
                print('Transitioning failed', file=sys.stderr)
                return 1
            print('Transitioning successful')
        else:
            print(f'unknown verb {verb}; get, list or set', file=sys.stderr)
            return 2
    finally:
        ros.close()
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
