"""What a statement's plan must read: ``Reads``, checked against the plans ``explain.py``
reads."""

from dataclasses import dataclass

from tests.plans.explain import Plan

# The tables whose size grows with the jobs: a plan may read them through indexes only.
GUARDED_TABLES = frozenset({"leasequeue_job", "leasequeue_dependency", "leasequeue_workflow"})
# Their indexes, by name (the small tables' indexes, such as the paused queues', are free).
_GUARDED_INDEX_PREFIXES = ("leasequeue_job_", "leasequeue_dep", "leasequeue_workflow_")


def guarded_indexes(plan: Plan) -> set[str]:
    return {name for name in plan.indexes() if name.startswith(_GUARDED_INDEX_PREFIXES)}


@dataclass(frozen=True)
class Reads:
    """The indexes of the guarded tables one statement's plan must read, each written as its
    name or as alternatives either of which is right (``"a|b"``). The plan must read each,
    no other index of those tables but those it ``may`` read too, and none of them whole (no
    sequential scan)."""

    indexes: tuple[str, ...]
    may: tuple[str, ...] = ()

    def problems(self, plan: Plan) -> list[str]:
        used = guarded_indexes(plan)
        allowed = {name for item in self.indexes for name in item.split("|")} | set(self.may)
        problems = [
            f"reads {item.replace('|', ' or ')} no more"
            for item in self.indexes
            if not used & set(item.split("|"))
        ]
        problems += [f"reads {name}, not written for it" for name in sorted(used - allowed)]
        problems += [f"reads {table} whole" for table in sorted(plan.seq_scans() & GUARDED_TABLES)]
        return problems


def outline(plan: Plan) -> str:
    """The plan as an indented list of its nodes (type, table, index, rows), for a failure."""
    lines: list[str] = []

    def walk(node: dict, depth: int) -> None:
        parts = [node["Node Type"]]
        if "Relation Name" in node:
            parts.append(f"on {node['Relation Name']}")
        if "Index Name" in node:
            parts.append(f"using {node['Index Name']}")
        for key in ("Index Cond", "Filter", "Hash Cond", "Merge Cond"):
            if key in node:
                parts.append(f"[{key}: {node[key]}]")
        parts.append(f"(rows {node.get('Actual Rows')} x {node.get('Actual Loops')})")
        lines.append("  " * depth + " ".join(parts))
        for child in node.get("Plans", ()):
            walk(child, depth + 1)

    walk(plan.tree, 1)
    return f"{' '.join(plan.text.split())[:160]}\n" + "\n".join(lines)


def check(plan: Plan, reads: Reads) -> None:
    problems = reads.problems(plan)
    assert not problems, "; ".join(problems) + "\n" + outline(plan)
