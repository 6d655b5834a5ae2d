# Copyright 2026 mira_memory developers
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

"""
The memory node: sole owner of the SQLite store and its single authority.

It serves, under its own name (/mira/memory in bringup):
- ~/recall_memory (RecallMemory): exact, bounded, read-only recall, through a
  connection that cannot write;
- ~/remember (Remember): operator-grounded admission, every rule enforced
  here whatever the caller checked;
- ~/admin/<command>: one service per console command.

Recall and remember exist only while persistent memory is enabled; the admin
services always exist so `memory persistent` can say that it is disabled.
Every callback answers through its response: no exception leaves one.
"""

import sys

from mira_memory import node_runner, responses
from mira_memory.core import admission, archive, config, recall, store
from mira_memory.core.normalize import has_control_characters
from mira_memory.srv import AdminAdd, AdminAliasAdd, AdminEntityAdd, AdminEntityFind
from mira_memory.srv import AdminBackup, AdminExport, AdminForget, AdminRetire
from mira_memory.srv import AdminFind, AdminList, AdminShow, AdminStatus
from mira_memory.srv import RecallMemory, Remember
from rcl_interfaces.msg import ParameterDescriptor, ParameterType, SetParametersResult
from rclpy.exceptions import ParameterException
from rclpy.node import Node

FIND_MEMORY_LIMIT = 100
LIST_MEMORY_LIMIT = 1000
ROBOT_PROFILE_MAX_LENGTH = 256


class MemoryNode(Node):
    """Owns the memory store and serves recall, remember and admin."""

    def __init__(self, **kwargs):
        super().__init__('memory', **kwargs)
        self._store = None
        self._reader = None
        try:
            self._declare_parameters()
        except ParameterException as error:
            # A wrongly typed override: one clear line instead of a traceback.
            raise node_runner.StartupError(f'invalid parameter: {error}') from None
        self.settings = self._resolve_settings()
        if self.settings.enabled:
            self._open_store(self.settings.database_path)
            self.create_service(RecallMemory, '~/recall_memory', self._on_recall)
            self.create_service(Remember, '~/remember', self._on_remember)
        for service_type, command, work in ((AdminBackup, 'backup', archive.backup),
                                            (AdminExport, 'export', archive.export)):
            self.create_service(
                service_type, f'~/admin/{command}', self._copy_callback(command, work))
        # admin/list comes last: once it is in the graph, every admin service is.
        admin = (
            (AdminStatus, 'status', self._admin_status),
            (AdminEntityAdd, 'entity_add', self._admin_entity_add),
            (AdminEntityFind, 'entity_find', self._admin_entity_find),
            (AdminAliasAdd, 'alias_add', self._admin_alias_add),
            (AdminFind, 'find', self._admin_find),
            (AdminAdd, 'add', self._admin_add),
            (AdminShow, 'show', self._admin_show),
            (AdminRetire, 'retire', self._admin_retire),
            (AdminForget, 'forget', self._admin_forget),
            (AdminList, 'list', self._admin_list),
        )
        for service_type, command, handler in admin:
            self.create_service(
                service_type, f'~/admin/{command}', self._admin_callback(command, handler))
        if self.settings.enabled:
            self.get_logger().info(
                f'persistent memory enabled: {self.settings.database_path} '
                f'(schema version {self._store.schema_version}), '
                f'robot profile {self.robot_profile!r}')
        else:
            self.get_logger().info('persistent memory is disabled; no database is opened')

    # Parameters -----------------------------------------------------------

    def _declare_parameters(self):
        read_only = {'read_only': True}
        self.declare_parameter('enabled', False, ParameterDescriptor(
            type=ParameterType.PARAMETER_BOOL, read_only=True,
            description='Open persistent memory. Off: no database, no directory, '
                        'no recall or remember services.'))
        self.declare_parameter('database_path', '', ParameterDescriptor(
            type=ParameterType.PARAMETER_STRING, **read_only,
            description='Absolute path of the SQLite file (~ expanded); its parent '
                        'directory is created when missing.'))
        self.declare_parameter('config_file', '', ParameterDescriptor(
            type=ParameterType.PARAMETER_STRING, **read_only,
            description='Optional TOML file with a [memory] section (enabled, '
                        'database_path relative to the file). When set, it decides '
                        'enabled and database_path instead of those parameters.'))
        self.declare_parameter('robot_profile', '', ParameterDescriptor(
            type=ParameterType.PARAMETER_STRING,
            description='Name of the active robot profile: the entity that '
                        'you/your/yours/yourself denote in remember. Resolved at '
                        'admission time, so it may change at runtime.'))
        self._check_robot_profile(self.robot_profile)
        self.add_on_set_parameters_callback(self._on_set_parameters)

    @property
    def robot_profile(self):
        """Return the current robot profile name."""
        return self.get_parameter('robot_profile').value

    @staticmethod
    def _check_robot_profile(value):
        if len(value) > ROBOT_PROFILE_MAX_LENGTH or has_control_characters(value):
            raise node_runner.StartupError(
                f'robot_profile must be at most {ROBOT_PROFILE_MAX_LENGTH} characters '
                'without control characters')

    def _on_set_parameters(self, parameters):
        for parameter in parameters:
            if parameter.name == 'robot_profile':
                try:
                    self._check_robot_profile(parameter.value)
                except node_runner.StartupError as error:
                    return SetParametersResult(successful=False, reason=str(error))
        return SetParametersResult(successful=True)

    def _resolve_settings(self):
        config_file = self.get_parameter('config_file').value
        try:
            if config_file:
                return config.settings_from_config_file(config_file)
            return config.settings_from_parameters(
                self.get_parameter('enabled').value,
                self.get_parameter('database_path').value)
        except config.ConfigError as error:
            raise node_runner.StartupError(str(error)) from None

    def _open_store(self, path):
        try:
            self._store = store.MemoryStore.open(path, create_parent=True)
            self._reader = self._store.open_reader()
        except store.StoreError as error:
            self.close()
            raise node_runner.StartupError(
                f'cannot open persistent memory at {path}: {error}') from None

    def close(self):
        """Close the store once (idempotent); call after spinning has stopped."""
        for handle in (self._reader, self._store):
            if handle is not None:
                handle.close()
        self._reader = self._store = None

    def destroy_node(self):
        """Close the store (once), then destroy the node."""
        # node_runner calls this after spinning stopped, so no request is in flight.
        self.close()
        super().destroy_node()

    # Recall and remember -----------------------------------------------------

    def _on_recall(self, request, response):
        try:
            result = recall.recall(self._reader, request.query)
        except Exception:  # recall() never raises by contract; this guards the contract
            self.get_logger().error('recall failed unexpectedly', throttle_duration_sec=1.0)
            result = recall.unavailable()
        return responses.fill_recall(response, result)

    def _on_remember(self, request, response):
        try:
            context = admission.TurnContext(
                episode_id=request.episode_id, turn_id=request.turn_id,
                utterance=request.utterance)
            proposal = admission.Proposal(
                kind=request.kind, subject=request.subject, predicate=request.predicate,
                value=request.value, related_entity=request.related_entity or None,
                related_role=request.related_role or None, evidence=request.evidence)
            result = admission.admit(self._store, context, proposal, self.robot_profile)
        except Exception:  # admit() never raises by contract; this guards the contract
            self.get_logger().error('remember failed unexpectedly', throttle_duration_sec=1.0)
            result = admission.backend_failure()
        if result.status == admission.STATUS_APPLIED:
            # Debug, not info: an rclpy log call costs about as much as the
            # admission itself (see bench/README.md), and the row's source
            # label already records the episode and turn of every write.
            self.get_logger().debug(
                f'remember {result.outcome} {store.format_memory_id(result.memory_id)} '
                f'(episode {request.episode_id!r} turn {request.turn_id!r})')
        return responses.fill_remember(response, result)

    # Admin -----------------------------------------------------------------

    def _admin_callback(self, command, handler):
        def callback(request, response):
            if self._store is None and command != 'status':
                return responses.fill_admin_disabled(response)
            try:
                handler(request, response)
            except store.StoreError as error:
                responses.fill_admin_error(response, error)
            except Exception as error:  # never let a callback raise into the executor
                self.get_logger().error(f'admin {command} failed: {error!r}')
                responses.fill_admin_error(response, error)
            return response
        return callback

    def _admin_status(self, request, response):
        response.robot_profile = self.robot_profile
        if self._store is None:
            response.enabled = False
            return responses.fill_admin_success(response, 'persistent memory is disabled')
        counts = self._store.counts()
        response.enabled = True
        response.database_path = str(self._store.path)
        response.schema_version = self._store.schema_version
        response.entity_count = counts['entities']
        response.alias_count = counts['aliases']
        response.memory_count = counts['memories']
        response.active_memory_count = counts['active_memories']
        response.link_count = counts['links']
        response.payload_count = counts['payloads']
        responses.fill_admin_success(response, 'persistent memory is enabled')

    def _admin_entity_add(self, request, response):
        entity = self._store.add_entity(request.entity_type, request.canonical_name)
        response.entity = responses.entity_record(entity)
        responses.fill_admin_success(
            response, f'created {store.format_entity_id(entity.id)}')

    def _admin_entity_find(self, request, response):
        entities = self._store.find_entities(request.name)
        response.entities = [responses.entity_record(entity) for entity in entities]
        responses.fill_admin_success(response, f'{len(entities)} exact match(es)')

    def _admin_alias_add(self, request, response):
        entity = self._store.add_alias(store.parse_entity_id(request.entity_id), request.alias)
        response.entity = responses.entity_record(entity)
        responses.fill_admin_success(
            response, f'alias added to {store.format_entity_id(entity.id)}')

    def _admin_find(self, request, response):
        found, _ = self._store.find_with_newest_memories(
            request.name, entity_limit=None, memory_limit=FIND_MEMORY_LIMIT, with_aliases=True)
        records = [
            responses.entity_record(entity, memories, truncated)
            for entity, memories, truncated in found]
        response.entities = records
        responses.fill_admin_success(response, f'{len(records)} exact match(es)')

    def _admin_add(self, request, response):
        new = store.NewMemory(
            kind=request.kind,
            summary=request.summary,
            links=tuple(
                (store.parse_entity_id(link.entity_id), link.role) for link in request.links),
            predicate=request.predicate or None,
            value=request.value or None,
            source_kind=request.source_kind or store.SOURCE_CONSOLE,
            source_label=request.source_label,
            confidence=request.confidence if request.has_confidence else None)
        memory = self._store.add_memory(new)
        response.memory = responses.memory_message(memory)
        responses.fill_admin_success(
            response, f'created {store.format_memory_id(memory.id)}')

    def _admin_show(self, request, response):
        memory, payloads = self._store.get_memory(store.parse_memory_id(request.memory_id))
        response.memory = responses.memory_message(memory)
        response.payloads = [responses.payload_record(payload) for payload in payloads]
        responses.fill_retirement(response, memory)
        responses.fill_admin_success(response, store.format_memory_id(memory.id))

    def _admin_list(self, request, response):
        entity = self._store.get_entity(store.parse_entity_id(request.entity_id))
        memories, truncated = self._store.newest_active_memories(entity.id, LIST_MEMORY_LIMIT)
        response.entity = responses.entity_record(entity, memories, truncated)
        responses.fill_admin_success(response, f'{len(memories)} active memories')

    def _admin_retire(self, request, response):
        memory = self._store.retire_memory(
            store.parse_memory_id(request.memory_id), request.reason)
        response.memory = responses.memory_message(memory)
        responses.fill_retirement(response, memory)
        responses.fill_admin_success(
            response, f'retired {store.format_memory_id(memory.id)}')

    def _admin_forget(self, request, response):
        target = request.target
        if target.startswith('ENT'):
            plan = self._store.forget_entity(
                store.parse_entity_id(target), apply=request.confirm)
        else:
            plan = self._store.forget_memory(
                store.parse_memory_id(target), apply=request.confirm)
        responses.fill_forget(response, plan)

    def _copy_callback(self, command, work):
        """
        Serve backup or export through its own read-only snapshot connection.

        The copy runs inside the callback: the executor waits for it (the
        threaded version did not get its reply out; see the report of issue 13).
        """
        def callback(request, response):
            if self._store is None:
                return responses.fill_admin_disabled(response)
            try:
                result = work(str(self._store.path), request.path, force=request.force)
            except Exception as error:  # never let a callback raise into the executor
                if not isinstance(error, store.StoreError):
                    self.get_logger().error(f'admin {command} failed: {error!r}')
                return responses.fill_admin_error(response, error)
            return responses.fill_copy(response, result, command)
        return callback


def main(args=None):
    """Run the memory node until SIGINT/SIGTERM; exit 1 if it cannot start."""
    return node_runner.run(MemoryNode, 'memory', args)


if __name__ == '__main__':
    sys.exit(main())
