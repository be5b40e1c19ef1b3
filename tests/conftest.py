import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from pg import pg_cluster, pg_database  # noqa: E402,F401  (PostgreSQL fixtures, see tests/pg.py)
