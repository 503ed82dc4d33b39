"""One Stage 1 per stream behind one var-id space (a guard for the engine).

``Stage1`` evaluates every stream with its own automaton. The engine keeps one
``Stage1`` *per stream* and numbers definitions globally, so that var ids of
different streams can never be confused anywhere downstream (R_T rows, tries,
witness maps), whatever Stage 1 does internally. (Found while integrating:
``Stage1`` caches per-trie-node emissions by a trie-node id that restarts at 1
in every stream's automaton, so with several streams one stream could emit
another stream's var ids; this adapter makes the engine immune to that.)

Example::

    stages = StreamStages()
    x = stages.register(definition_on_S)         # global id
    stages.require_value(x)
    witnesses = stages.evaluate("S", "d1", ts, xml)   # var columns in global ids
"""

from __future__ import annotations

import pyarrow as pa

from xscl.lang.normal_form.model import VarDef
from xscl.xpath import Stage1
from xscl.xpath.witness import WitnessBatch


class StreamStages:
    """See the module docstring."""

    def __init__(self) -> None:
        self._stages: dict[str, Stage1] = {}
        self._global: dict[tuple[str, int], int] = {}
        self._local: dict[int, tuple[str, int]] = {}
        self._to_global: dict[str, dict[int, int]] = {}

    def stage(self, stream: str) -> Stage1:
        stage = self._stages.get(stream)
        if stage is None:
            stage = Stage1()
            self._stages[stream] = stage
            self._to_global[stream] = {}
        return stage

    def register(self, definition: VarDef) -> int:
        stream = definition.stream
        local = self.stage(stream).register(definition)
        key = (stream, local)
        ident = self._global.get(key)
        if ident is None:
            ident = len(self._global) + 1
            self._global[key] = ident
            self._local[ident] = key
            self._to_global[stream][local] = ident
        return ident

    def definition(self, var_id: int) -> VarDef:
        stream, local = self._local[var_id]
        return self._stages[stream].definition(local)

    def require_value(self, var_id: int) -> None:
        stream, local = self._local[var_id]
        self._stages[stream].require_value(local)

    def require_nodes(self, var_id: int) -> None:
        stream, local = self._local[var_id]
        self._stages[stream].require_nodes(local)

    def require_pair(self, parent_id: int, child_id: int) -> None:
        stream, parent = self._local[parent_id]
        child_stream, child = self._local[child_id]
        if child_stream != stream:
            raise ValueError(f"pair ({parent_id}, {child_id}) spans two streams")
        self._stages[stream].require_pair(parent, child)

    def evaluate(self, stream: str, docid: str, ts_micros: int, xml: str) -> WitnessBatch:
        """Witnesses of one document with var ids in the global space (raises ``Stage1Error``)."""
        batch = self.stage(stream).evaluate(stream, docid, ts_micros, xml)
        mapping = self._to_global[stream]
        if not mapping:
            return batch

        def remap(part: pa.RecordBatch, names: tuple[str, ...]) -> pa.RecordBatch:
            if part.num_rows == 0:
                return part
            columns = []
            for name in part.schema.names:
                column = part.column(name)
                if name in names:
                    column = pa.array([mapping.get(v, -1) for v in column.to_pylist()], pa.int32())
                columns.append(column)
            return pa.RecordBatch.from_arrays(columns, schema=part.schema)

        return WitnessBatch(
            docs=batch.docs,
            bindings=remap(batch.bindings, ("var1", "var2")),
            values=remap(batch.values, ("var",)),
            matches=remap(batch.matches, ("var",)),
            errors=batch.errors,
            function_errors=batch.function_errors,
        )
