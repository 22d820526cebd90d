"""ctshard specs as PyTorch DTensor placements and back.

``to_placements("S(0)P(sum)")`` gives ``(Shard(dim=0), Partial(sum))``, ready for
``DTensor.from_local``, ``distribute_tensor`` or ``redistribute``; ``to_spec`` turns a sequence of
DTensor placements (or a DTensor, or a DTensorSpec) into ctshard's spec text;
``plan_placements(plan)`` gives every node's planned outputs as DTensor placements (keyed by FQN for
the lifted parameters and buffers of a ``torch.export`` program).

``run_plan(gm, plan, mesh, inputs, mode="dtensor")`` executes a plan of ``ctshard.plan(gm, ...)``
on a DTensor ``DeviceMesh``: each op's tensor arguments are moved to ctshard's input specs with
DTensor's ``redistribute``, then the op runs through DTensor's dispatch (``"dtensor"``) or on the
local shards wrapped with ctshard's predicted placements (``"local"``); the result records, per
node, ctshard's predicted and DTensor's actual output placements and the collectives issued
(``ctshard._run``). ``planned_specs(gm, plan)`` gives every value's planned specs.

``auto_parallel(model, example_inputs, mesh)`` plans a module's training step with the whole-graph
planner and returns a ``ParallelPlan`` whose ``apply(model)`` runs it with DTensor: the joint
graph with the planned placements by default, DTensor's propagation with ``execute="propagate"``
(docs/auto_parallel.md).
"""

from __future__ import annotations

import torch  # noqa: F401  (torch.distributed needs torch imported first)

from ._auto import ParallelPlan, auto_parallel
from ._dtensor_rules import import_dtensor_rule
from ._placements import plan_placements, to_placements, to_spec
from ._run import CollectiveLog, PlanRun, collective_kind, planned_specs, run_plan

__all__ = ["to_placements", "to_spec", "plan_placements", "run_plan", "PlanRun", "planned_specs", "collective_kind", "auto_parallel",
           "ParallelPlan", "import_dtensor_rule", "CollectiveLog"]
