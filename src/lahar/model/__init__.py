"""API objects as typed models: Queue, PodGroup, Job (vcjob), Pod, Node, Command, PriorityClass.

See ``lahar.model.manifest`` for reading and writing manifests.
"""

from lahar.model.base import ApiObject, ObjectMeta, OwnerReference
from lahar.model.cluster import Command, Node, PriorityClass, SchedulerConfiguration
from lahar.model.job import Job, expand_job
from lahar.model.manifest import dump_json, dump_yaml, kind_class, load_files, load_objects, parse_object
from lahar.model.queue import DEFAULT, ROOT, Queue, QueueAction, QueueState
from lahar.model.workload import Pod, PodGroup, PodGroupPhase, PodPhase

__all__ = [
    "ApiObject",
    "ObjectMeta",
    "OwnerReference",
    "Command",
    "Node",
    "PriorityClass",
    "SchedulerConfiguration",
    "Job",
    "expand_job",
    "Queue",
    "QueueAction",
    "QueueState",
    "DEFAULT",
    "ROOT",
    "Pod",
    "PodGroup",
    "PodGroupPhase",
    "PodPhase",
    "dump_json",
    "dump_yaml",
    "kind_class",
    "load_files",
    "load_objects",
    "parse_object",
]
