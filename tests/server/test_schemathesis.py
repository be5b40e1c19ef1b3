"""Property-based fuzzing of the whole HTTP API from its own OpenAPI document (schemathesis).

Every operation receives generated requests (bounded number of examples per operation); the
server must never answer 5xx and its answers must conform to the schema it publishes.
"""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance, status_code_conformance

from lahar.scheduler.framework.config import default_config_text, load_config
from lahar.server.main import build_server
from lahar.store import MemoryStore

APP = build_server(MemoryStore(), load_config(default_config_text()), auth=False).app
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)


@schema.parametrize()
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
def test_api_never_fails_with_a_server_error(case):
    if case.query and "watch" in case.query:
        case.query = {**case.query, "timeoutSeconds": 0}  # a watch streams until its timeout: keep it short
    case.call_and_validate(checks=[not_a_server_error, response_schema_conformance, status_code_conformance])
