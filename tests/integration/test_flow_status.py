"""``manage.py leasequeue status`` lists the flow-control limits in use and what they use."""

import pytest

from django_leasequeue.management import status_report
from tests import flow_tasks
from tests.helpers import claim_limited

pytestmark = pytest.mark.django_db(transaction=True)


def test_status_lists_queue_limits_and_the_busiest_limited_keys(backend):
    [flow_tasks.single_slot.enqueue(n, 0) for n in range(3)]
    [flow_tasks.llm_call.enqueue(user_id, 0, 0) for user_id in range(3)]
    assert len(claim_limited(free=10)) == 1 + 2

    report = status_report.build(backend)
    limits = {limit["scope"]: limit for limit in report.limits}
    assert limits["queue llm"] == {"scope": "queue llm", "running": "2/2", "unfinished": "3/1000"}
    single = limits["task:tests.flow_tasks.single_slot"]
    assert (single["limits"], single["running"], single["waiting"]) == ("concurrency 1", "1/1", 2)
    assert single["now"] == "waiting for a concurrency slot (1/1 running)"
    text = status_report.render_text(report)
    assert "LIMITS IN USE" in text
    assert "scope=queue llm, running=2/2, unfinished=3/1000" in text
