"""Real cluster traces replayed through the simulator (``lahar simulate --trace KIND:PATH``).

Loaders read a trace into ``TraceJob`` records (``records``); ``workload`` applies
``--limit-jobs``, ``--speedup``, the cluster and the queue rules, and builds the API objects.
Formats: ``philly`` (Microsoft Philly 2017), ``alibaba`` (Alibaba GPU 2023 "openb"), ``csv``
(Lahar's own format for users' job logs, see ``csvtrace``).
"""

from lahar.sim.traces.alibaba import load_alibaba, load_alibaba_nodes
from lahar.sim.traces.cluster import default_cluster, parse_cluster
from lahar.sim.traces.csvtrace import load_csv
from lahar.sim.traces.philly import load_philly
from lahar.sim.traces.records import Routing, Trace, TraceJob, job_objects, queue_name, route
from lahar.sim.traces.workload import TRACE_KINDS, QueueFile, Workload, build_workload, load_trace, read_queue_file

__all__ = [
    "TRACE_KINDS",
    "QueueFile",
    "Routing",
    "Trace",
    "TraceJob",
    "Workload",
    "build_workload",
    "default_cluster",
    "job_objects",
    "load_alibaba",
    "load_alibaba_nodes",
    "load_csv",
    "load_philly",
    "load_trace",
    "parse_cluster",
    "queue_name",
    "read_queue_file",
    "route",
]
