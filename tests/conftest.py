import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from pg import pg_cluster, pg_database  # noqa: E402,F401  (PostgreSQL fixtures, see tests/pg.py)
from source import COMPILED  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "python_source: replaces functions inside the scheduling core to watch or change it; where the "
        "installed core is compiled (mypyc), tests/test_python_source.py runs these against the Python source",
    )


def pytest_collection_modifyitems(config, items):
    if not COMPILED:
        return
    skip = pytest.mark.skip(reason="replaces functions inside the compiled core: tests/test_python_source.py runs it against the Python source")
    for item in items:
        if "python_source" in item.keywords:
            item.add_marker(skip)
