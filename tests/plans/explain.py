"""The plans a session runs, as ``auto_explain`` reports them, nested statements included.

``auto_explain`` is loaded into the session (``LOAD`` needs a superuser, as the test database's
owner is) and logs, at NOTICE level so that the client receives it, the plan of every statement
the session executes, those run inside PL/pgSQL functions too: the plans as they ran, with the
function's own settings (``enable_seqscan``, ``plan_cache_mode``) and the plan PL/pgSQL cached,
which an ``EXPLAIN`` of the statement's text would not show. ``log_analyze`` adds the rows each
node returned (without timing: it costs, and the tests do not read it).
"""

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psycopg

AUTO_EXPLAIN = (
    "LOAD 'auto_explain'",
    "SET auto_explain.log_min_duration = 0",
    "SET auto_explain.log_nested_statements = on",
    "SET auto_explain.log_format = json",
    "SET auto_explain.log_level = notice",
    "SET auto_explain.log_analyze = on",
    "SET auto_explain.log_timing = off",
    "SET auto_explain.log_verbose = on",
)

# The nodes that read a table's rows, and the one that reads a bitmap of an index for its
# parent's Bitmap Heap Scan (it names the index, not the table).
_TABLE_SCANS = {"Seq Scan", "Index Scan", "Index Only Scan", "Bitmap Heap Scan", "Tid Scan"}
_PARAMETER = re.compile(r"\$\d+")


@dataclass(frozen=True)
class Plan:
    """One executed statement's plan: its text and its tree (auto_explain's JSON)."""

    text: str
    tree: dict[str, Any]

    def nodes(self) -> Iterator[dict[str, Any]]:
        pending = [self.tree]
        while pending:
            node = pending.pop()
            yield node
            pending.extend(node.get("Plans", ()))

    def seq_scans(self) -> set[str]:
        """The tables read whole (a sequential scan)."""
        return {node["Relation Name"] for node in self.nodes() if node["Node Type"] == "Seq Scan"}

    def scanned(self) -> set[str]:
        """The tables whose rows a scan node reads (an update's own target is not a scan)."""
        return {
            node["Relation Name"]
            for node in self.nodes()
            if node["Node Type"] in _TABLE_SCANS and "Relation Name" in node
        }

    def indexes(self) -> set[str]:
        """Every index the plan reads, by name."""
        return {node["Index Name"] for node in self.nodes() if "Index Name" in node}

    def index_scans(self, index: str) -> list[dict[str, Any]]:
        return [node for node in self.nodes() if node.get("Index Name") == index]

    def rows_read(self, index: str) -> int:
        """The rows the plan read through ``index``: those its scans returned, and those they
        read and filtered out, over all their loops."""
        return sum(
            (node["Actual Rows"] + node.get("Rows Removed by Filter", 0)) * node["Actual Loops"]
            for node in self.index_scans(index)
        )

    def node_types(self) -> set[str]:
        return {node["Node Type"] for node in self.nodes()}

    def is_generic(self) -> bool:
        """Whether the plan is a generic one: it refers to the statement's parameters (``$n``)
        instead of holding their values as constants, as a custom plan does. The outputs of
        the plan's own subplans are written ``$n`` too; those are not counted."""
        subplan_outputs: set[str] = set()
        for node in self.nodes():
            subplan_outputs.update(_PARAMETER.findall(node.get("Subplan Name", "")))
        referred: set[str] = set()
        for node in self.nodes():
            for key, value in node.items():
                if key not in {"Plans", "Subplan Name"}:
                    referred.update(_PARAMETER.findall(json.dumps(value)))
        return bool(referred - subplan_outputs)


class PlanLog:
    """Collects the plans ``auto_explain`` sends a connection, in the order they ended (a
    function's statements before the call that ran them)."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.plans: list[Plan] = []
        for setting in AUTO_EXPLAIN:
            conn.execute(setting)
        conn.add_notice_handler(self._received)

    def _received(self, diagnostic: psycopg.errors.Diagnostic) -> None:
        message = diagnostic.message_primary or ""
        head, found, body = message.partition("plan:\n")
        if found and head.startswith("duration:"):
            report = json.loads(body)
            self.plans.append(Plan(report["Query Text"], report["Plan"]))

    def take(self) -> list[Plan]:
        """The plans received since the last take."""
        plans, self.plans = self.plans, []
        return plans
