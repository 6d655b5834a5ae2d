# SPDX-License-Identifier: Apache-2.0
"""
The admin commands' handlers of MemoryService (memory/service.py), one method each.

A mixin, moved out of service.py as it was: MemoryService.admin() looks up
and calls these (admin_handlers), inside its error mapping and its
database-in-place check; each fills the generated response or raises a
store error. They use the service's store, health, review settings, recall
cache and copies_busy. The supervised-review commands (pending ... dismiss)
are core/review's decisions (docs/review.md).
"""

from mira_memory.core import store
from mira_memory.core.admission import proposal_rules
from mira_memory.core.review import check, decisions
from mira_memory.memory import responses

FIND_MEMORY_LIMIT = 100
LIST_MEMORY_LIMIT = 1000


class AdminHandlers:
    """MemoryService's admin_<command> handlers (a mixin: it has no state of its own)."""

    def admin_status(self, request, response):
        """Fill an AdminStatus response: enabled, path, schema and row counts."""
        response.robot_profile = self.robot_profile
        if self.store is None:
            response.enabled = False
            return responses.fill_admin_success(response, 'persistent memory is disabled')
        counts = self.store.counts()
        self.health.set_counts(counts)
        response.enabled = True
        response.database_path = str(self.store.path)
        response.schema_version = self.store.schema_version
        response.entity_count = counts['entities']
        response.alias_count = counts['aliases']
        response.memory_count = counts['memories']
        response.active_memory_count = counts['active_memories']
        response.link_count = counts['links']
        response.payload_count = counts['payloads']
        response.pending_count = self.store.pending_items(1)[1][0]
        responses.fill_admin_success(response, 'persistent memory is enabled')

    def admin_entity_add(self, request, response):
        """Create an entity."""
        entity = self.store.add_entity(request.entity_type, request.canonical_name)
        self.health.wrote(entities=1)
        response.entity = responses.entity_record(entity)
        responses.fill_admin_success(
            response, f'created {store.format_entity_id(entity.id)}')

    def admin_entity_find(self, request, response):
        """Find entities by exact name or alias."""
        entities = self.store.find_entities(request.name)
        response.entities = [responses.entity_record(entity) for entity in entities]
        responses.fill_admin_success(response, f'{len(entities)} exact match(es)')

    def admin_alias_add(self, request, response):
        """Add an alias to an entity."""
        entity = self.store.add_alias(store.parse_entity_id(request.entity_id), request.alias)
        self.health.wrote(aliases=1)
        response.entity = responses.entity_record(entity)
        responses.fill_admin_success(
            response, f'alias added to {store.format_entity_id(entity.id)}')

    def admin_find(self, request, response):
        """Find entities with their newest memories."""
        found, _ = self.store.find_with_newest_memories(
            request.name, entity_limit=None, memory_limit=FIND_MEMORY_LIMIT, with_aliases=True)
        records = [
            responses.entity_record(entity, memories, truncated)
            for entity, memories, truncated in found]
        response.entities = records
        responses.fill_admin_success(response, f'{len(records)} exact match(es)')

    def admin_add(self, request, response):
        """Add a memory (supervised console write)."""
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
        memory = self.store.add_memory(new)
        self.health.wrote(memories=1, active_memories=1 if memory.status == 'active' else 0)
        response.memory = responses.memory_message(memory)
        responses.fill_admin_success(
            response, f'created {store.format_memory_id(memory.id)}')

    def admin_show(self, request, response):
        """Show one memory with its payloads and its receipt."""
        memory, payloads = self.store.get_memory(store.parse_memory_id(request.memory_id))
        response.memory = responses.memory_message(memory)
        response.payloads = [responses.payload_record(payload) for payload in payloads]
        responses.fill_receipt(response, self.store.get_receipt(memory.id))
        responses.fill_retirement(response, memory)
        responses.fill_supersessions(response, *self.store.supersessions(memory.id))
        responses.fill_admin_success(response, store.format_memory_id(memory.id))

    def admin_list(self, request, response):
        """List an entity's newest active memories."""
        entity = self.store.get_entity(store.parse_entity_id(request.entity_id))
        memories, truncated = self.store.newest_active_memories(entity.id, LIST_MEMORY_LIMIT)
        response.entity = responses.entity_record(entity, memories, truncated)
        responses.fill_admin_success(response, f'{len(memories)} active memories')

    def admin_retire(self, request, response):
        """Retire a memory with a reason."""
        memory = self.store.retire_memory(
            store.parse_memory_id(request.memory_id), request.reason)
        self.health.wrote(active_memories=-1)
        self._recount_receipts()
        response.memory = responses.memory_message(memory)
        responses.fill_retirement(response, memory)
        responses.fill_admin_success(
            response, f'retired {store.format_memory_id(memory.id)}')

    def admin_forget(self, request, response):
        """Preview (confirm false) or apply the removal of a memory or an entity."""
        if request.confirm and self._copies_busy():
            # The copy's read snapshot would keep the forgotten text in the WAL.
            raise store.BusyError(
                'a backup, export or verify is running; forget when it is done')
        target = request.target
        if target.startswith('ENT'):
            plan = self.store.forget_entity(
                store.parse_entity_id(target), apply=request.confirm)
        else:
            plan = self.store.forget_memory(
                store.parse_memory_id(target), apply=request.confirm)
        if request.confirm:
            # A forget may remove any number of rows of every kind: count afresh.
            self.health.set_counts(self.store.counts())
            # Kept answers would hold the forgotten text in this process until
            # replaced: the forget drops them now. (Admission keeps no text
            # past its request: core/admission/operator_turn.py.)
            self.recall_cache.clear()
            self._recount_receipts()
        responses.fill_forget(response, plan)

    # Supervised review ---------------------------------------------------------

    def admin_pending(self, request, response):
        """List the refused proposals waiting for review (memory pending)."""
        self.expire_pending()
        limit = response.ITEMS_MAX
        items, (waiting, dropped, expired) = self.store.pending_items(limit + 1)
        response.items = [responses.pending_record(item, self.review) for item in items[:limit]]
        response.items_truncated = len(items) > limit
        response.pending_count, response.dropped_count = waiting, dropped
        response.expired_count = expired
        response.enabled = self.review.enabled
        response.max_items = self.review.max_items
        response.max_age_days = self.review.max_age.total_seconds() / 86400
        responses.fill_admin_success(response, f'{waiting} pending')

    def admin_pending_show(self, request, response):
        """Show one waiting item and what the running rules say of it now."""
        pending_id = store.parse_pending_id(request.pending_id)
        self.expire_pending()
        item, closed = self.store.pending_item(pending_id)
        if item is None:
            if closed is None:
                raise store.NotFoundError(f'{request.pending_id} not found (no such pending item)')
            raise store.ClosedError(decisions.closed_text(closed))
        with self.store.snapshot() as conn:
            now = decisions.assess(conn, item)
        response.item = responses.pending_record(item, self.review)
        responses.fill_assessment(response, now)
        responses.fill_admin_success(response, request.pending_id)

    def admin_accept(self, request, response):
        """Accept a pending item (memory accept P<n> [--new-entity TYPE --alias ...])."""
        self._review_decision(response, decisions.accept(
            self.store, store.parse_pending_id(request.pending_id), request.reviewer,
            self.review, new_entity_type=request.new_entity_type or None,
            aliases=tuple(request.aliases)))

    def admin_supersede(self, request, response):
        """Supersede the memories a pending item conflicts with (memory supersede P<n>)."""
        self._review_decision(response, decisions.supersede(
            self.store, store.parse_pending_id(request.pending_id), request.reviewer,
            self.review))

    def admin_dismiss(self, request, response):
        """Remove a pending item (memory dismiss P<n>); its text leaves the WAL too."""
        if self._copies_busy():
            # The copy's read snapshot would keep the item's text in the WAL.
            raise store.BusyError(
                'a backup, export or verify is running; dismiss when it is done')
        self._review_decision(response, decisions.dismiss(
            self.store, store.parse_pending_id(request.pending_id), request.reviewer,
            self.review))

    def admin_check(self, request, response):
        """Judge a statement with remember's rules and write nothing (memory check)."""
        proposal = proposal_rules.Proposal(
            kind=request.kind, subject=request.subject, predicate=request.predicate,
            value=request.value, related_entity=request.related_entity or None,
            related_role=request.related_role or None, evidence=request.evidence)
        with self.store.snapshot() as conn:
            checked = check.check(conn, request.utterance, proposal, self.robot_profile,
                                  keeps_refusals=self.review.enabled)
        responses.fill_check(response, checked)

    def _review_decision(self, response, reviewed):
        """Answer a decision that was written; a new memory or entity changes the counts."""
        if reviewed.entity is not None:
            self.health.wrote(entities=1, aliases=len(reviewed.entity.aliases))
        if reviewed.memory_id is not None and reviewed.outcome != decisions.ALREADY_STORED:
            self.health.wrote(memories=1, active_memories=1 - len(reviewed.retired_ids))
        memory = None
        if reviewed.memory_id is not None:
            memory, _ = self.store.get_memory(reviewed.memory_id)
        responses.fill_reviewed(response, reviewed, memory)
