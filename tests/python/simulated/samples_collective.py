"""Collectives written into graphs (`_c10d_functional.*`, `_c10d_functional_autograd.*`, the legacy
`c10d_functional.*`, `vllm.*`, `_dtensor.shard_dim_alltoall`) on g = 2 and 3 program ranks x the
mesh (docs/semantics.md "Collectives in graphs"): a graph with collectives is one rank's program;
ctshard's mesh distributes it, and the collective runs per mesh device over the g ranks' pieces.
GROUP_REFERENCES holds each collective as torch computes it: `fn(ranks)` takes one (args, kwargs)
pair per program rank and returns every rank's outputs."""

import torch


def t(*shape):
    return {"shape": list(shape), "dtype": "float32"}


NS = "_c10d_functional"
LEGACY = "c10d_functional"
AUTOGRAD = "_c10d_functional_autograd"
NO_MISSING = "collective on program ranks: the missing-row search runs one program"


def s(op, g, tensors, args, kwargs=None, **extra):
    return {"op": op, "program_ranks": g, "tensors": tensors, "args": args, "kwargs": kwargs or {},
            "no_missing": NO_MISSING, **extra}


SAMPLES = [
    # all_reduce(input, reduce_op, group_name)
    s(f"{NS}.all_reduce.default", 2, [t(4, 5)], ["$0", "sum", "0"]),
    s(f"{NS}.all_reduce.default", 3, [t(6, 2)], ["$0", "avg", "0"]),
    s(f"{NS}.all_reduce.default", 2, [t(4, 3)], ["$0", "max", "0"]),
    s(f"{NS}.all_reduce.default", 3, [t(5)], ["$0", "min", "0"]),
    s(f"{NS}.all_reduce.default", 2, [t(4, 3)], ["$0", "product", "0"]),
    s(f"{NS}.all_reduce_.default", 2, [t(4, 5)], ["$0", "sum", "0"]),
    s(f"{AUTOGRAD}.all_reduce.default", 2, [t(4, 5)], ["$0", "min", "0"]),
    s(f"{LEGACY}.all_reduce.default", 3, [t(4, 5)], ["$0", "avg", "", [0, 1, 2], 3]),
    s(f"{NS}.all_reduce_coalesced.default", 2, [t(4, 5), t(6)], [["$0", "$1"], "sum", "0"]),
    s(f"{NS}.all_reduce_coalesced_.default", 3, [t(3, 4), t(6)], [["$0", "$1"], "max", "0"]),
    s(f"{LEGACY}.all_reduce_coalesced.default", 2, [t(4, 5), t(3)], [["$0", "$1"], "avg", "", [0, 1], 2]),
    s(f"{LEGACY}.all_reduce_coalesced_.default", 3, [t(3, 4), t(2)], [["$0", "$1"], "sum", "", [0, 1, 2], 3]),
    s("vllm.all_reduce.default", 2, [t(4, 6)], ["$0", "tp:0"]),
    s("vllm.all_reduce.default", 3, [t(8, 1)], ["$0", "tp:0"]),
    # identity: wait_tensor(tensor), broadcast(input, src, group_name)
    s(f"{NS}.wait_tensor.default", 2, [t(5, 3)], ["$0"]),
    s(f"{LEGACY}.wait_tensor.default", 2, [t(5, 3)], ["$0"]),
    s(f"{AUTOGRAD}.wait_tensor.default", 3, [t(4)], ["$0"]),
    s(f"{NS}.broadcast.default", 2, [t(4, 5)], ["$0", 1, "0"]),
    s(f"{NS}.broadcast.default", 3, [t(6, 3)], ["$0", 0, "0"]),
    s(f"{NS}.broadcast_.default", 3, [t(4, 2)], ["$0", 2, "0"]),
    s(f"{LEGACY}.broadcast.default", 2, [t(5)], ["$0", 0, "", [0, 1], 2]),
    # all_gather_into_tensor(input, group_size, group_name)
    s(f"{NS}.all_gather_into_tensor.default", 2, [t(4, 5)], ["$0", 2, "0"]),
    s(f"{NS}.all_gather_into_tensor.default", 3, [t(6, 4)], ["$0", 3, "0"]),
    s(f"{NS}.all_gather_into_tensor.default", 2, [t(5, 3)], ["$0", 2, "0"]),
    s(f"{AUTOGRAD}.all_gather_into_tensor.default", 2, [t(6, 2)], ["$0", 2, "0"]),
    s(f"{LEGACY}.all_gather_into_tensor.default", 3, [t(4, 3)], ["$0", "", [0, 1, 2], 3]),
    s(f"{NS}.all_gather_into_tensor_out.default", 2, [t(4, 5), t(8, 5)], ["$0", 2, "0"], {"out": "$1"}),
    s(f"{NS}.all_gather_into_tensor_coalesced.default", 2, [t(4, 5), t(6)], [["$0", "$1"], 2, "0"]),
    s(f"{LEGACY}.all_gather_into_tensor_coalesced.default", 3, [t(3, 2), t(6)], [["$0", "$1"], "", [0, 1, 2], 3]),
    # reduce_scatter_tensor(input, reduce_op, group_size, group_name)
    s(f"{NS}.reduce_scatter_tensor.default", 2, [t(8, 5)], ["$0", "sum", 2, "0"]),
    s(f"{NS}.reduce_scatter_tensor.default", 3, [t(12, 2)], ["$0", "max", 3, "0"]),
    s(f"{NS}.reduce_scatter_tensor.default", 2, [t(12, 3)], ["$0", "avg", 2, "0"]),
    s(f"{AUTOGRAD}.reduce_scatter_tensor.default", 2, [t(8, 3)], ["$0", "min", 2, "0"]),
    s(f"{LEGACY}.reduce_scatter_tensor.default", 3, [t(12, 2)], ["$0", "sum", "", [0, 1, 2], 3]),
    s(f"{NS}.reduce_scatter_tensor_out.default", 2, [t(8, 5), t(4, 5)], ["$0", "sum", 2, "0"], {"out": "$1"}),
    s(f"{NS}.reduce_scatter_tensor_coalesced.default", 2, [t(8, 5), t(4)], [["$0", "$1"], "sum", 2, "0"]),
    s(f"{LEGACY}.reduce_scatter_tensor_coalesced.default", 2, [t(8, 2), t(4)], [["$0", "$1"], "max", "", [0, 1], 2]),
    # all_to_all_single(input, output_split_sizes, input_split_sizes, group_name)
    s(f"{NS}.all_to_all_single.default", 2, [t(4, 5)], ["$0", [2, 2], [2, 2], "0"]),
    s(f"{NS}.all_to_all_single.default", 3, [t(6, 2)], ["$0", [2, 2, 2], [2, 2, 2], "0"]),
    s(f"{NS}.all_to_all_single.default", 2, [t(4, 3)], ["$0", [1, 3], [1, 3], "0"], note="unequal splits"),
    s(f"{NS}.all_to_all_single.default", 2, [t(4, 3)], ["$0", None, None, "0"], note="None splits"),
    s(f"{AUTOGRAD}.all_to_all_single.default", 3, [t(6, 4)], ["$0", [2, 2, 2], [2, 2, 2], "0"]),
    s(f"{LEGACY}.all_to_all_single.default", 2, [t(8, 3)], ["$0", [4, 4], [4, 4], "", [0, 1], 2]),
    # vLLM (tensor, dim, world_size, group_name)
    s("vllm.all_gather.default", 2, [t(3, 4)], ["$0", -1, 2, "tp:0"]),
    s("vllm.all_gather.default", 3, [t(6, 2)], ["$0", 0, 3, "tp:0"]),
    s("vllm.reduce_scatter.default", 2, [t(3, 8)], ["$0", 1, 2, "tp:0"]),
    s("vllm.reduce_scatter.default", 3, [t(12, 2)], ["$0", 0, 3, "tp:0"]),
    # _dtensor.shard_dim_alltoall(input, gather_dim, shard_dim, group_name): g from the table's shape
    s("_dtensor.shard_dim_alltoall.default", 2, [t(4, 6)], ["$0", 0, 1, "0"], note="no annotation: no shard of the moved dims"),
]


def _reduce(xs, op):
    st = torch.stack([x.to(torch.float64) for x in xs])
    r = {"sum": lambda: st.sum(0), "avg": lambda: st.mean(0), "mean": lambda: st.mean(0), "max": lambda: st.max(0).values,
         "min": lambda: st.min(0).values, "product": lambda: st.prod(0)}[op.lower()]()
    return r.to(xs[0].dtype)


def _chunk(x, dim, g, r):
    if x.shape[dim] % g:
        raise ValueError(f"size {x.shape[dim]} on dim {dim} is not divisible by {g}")
    c = x.shape[dim] // g
    return x.narrow(dim, r * c, c)


def _first(ranks):
    return [a[0] for a, _ in ranks]


def all_reduce(ranks):
    op = ranks[0][0][1] if len(ranks[0][0]) > 1 and isinstance(ranks[0][0][1], str) else "sum"
    v = _reduce(_first(ranks), op)
    return [v.clone() for _ in ranks]


def vllm_all_reduce(ranks):
    v = _reduce(_first(ranks), "sum")
    return [v.clone() for _ in ranks]


def identity(ranks):
    return [a[0].clone() for a, _ in ranks]


def broadcast(ranks):
    src = ranks[0][0][1]
    return [ranks[src][0][0].clone() for _ in ranks]


def all_gather(ranks, dim=0):
    v = torch.cat(_first(ranks), dim)
    return [v.clone() for _ in ranks]


def reduce_scatter(ranks, op=None, dim=0):
    op = op or ranks[0][0][1]
    v = _reduce(_first(ranks), op)
    return [_chunk(v, dim, len(ranks), r).clone() for r in range(len(ranks))]


def all_to_all(ranks, split=0, concat=0, splits=None):
    xs, g = _first(ranks), len(ranks)
    out = []
    for r in range(g):
        parts = []
        for x in xs:
            if splits is None:
                parts.append(_chunk(x, split, g, r))
            else:
                parts.append(x.narrow(split, sum(splits[:r]), splits[r]))
        out.append(torch.cat(parts, concat))
    return out


def all_to_all_single(ranks):
    splits = ranks[0][0][2]
    equal = splits is None or len(set(splits)) <= 1
    return all_to_all(ranks, splits=None if equal else list(splits))


def coalesced(one):
    def fn(ranks):
        n = len(ranks[0][0][0])
        per = [[] for _ in ranks]
        for i in range(n):
            single = [([a[0][i], *a[1:]], kw) for a, kw in ranks]
            for r, o in enumerate(one(single)):
                per[r].append(o)
        return per
    return fn


def vllm_gather(ranks):
    return all_gather(ranks, ranks[0][0][1] % ranks[0][0][0].dim())


def vllm_scatter(ranks):
    return reduce_scatter(ranks, "sum", ranks[0][0][1] % ranks[0][0][0].dim())


def shard_dim_alltoall(ranks):
    a = ranks[0][0]
    return all_to_all(ranks, split=a[2], concat=a[1])


GROUP_REFERENCES = {}
for ns in (NS, AUTOGRAD, LEGACY):
    GROUP_REFERENCES[f"{ns}.all_reduce.default"] = all_reduce
    GROUP_REFERENCES[f"{ns}.wait_tensor.default"] = identity
    GROUP_REFERENCES[f"{ns}.all_gather_into_tensor.default"] = all_gather
    GROUP_REFERENCES[f"{ns}.reduce_scatter_tensor.default"] = reduce_scatter
    GROUP_REFERENCES[f"{ns}.all_to_all_single.default"] = all_to_all_single
for ns in (NS, LEGACY):
    GROUP_REFERENCES[f"{ns}.all_reduce_coalesced.default"] = coalesced(all_reduce)
    GROUP_REFERENCES[f"{ns}.all_reduce_coalesced_.default"] = coalesced(all_reduce)
    GROUP_REFERENCES[f"{ns}.all_gather_into_tensor_coalesced.default"] = coalesced(all_gather)
    GROUP_REFERENCES[f"{ns}.reduce_scatter_tensor_coalesced.default"] = coalesced(reduce_scatter)
    GROUP_REFERENCES[f"{ns}.broadcast.default"] = broadcast
GROUP_REFERENCES.update({
    f"{NS}.all_reduce_.default": all_reduce,
    f"{NS}.all_reduce_coalesced_.default": coalesced(all_reduce),
    f"{NS}.all_gather_into_tensor_out.default": all_gather,
    f"{NS}.reduce_scatter_tensor_out.default": reduce_scatter,
    f"{NS}.broadcast_.default": broadcast,
    "vllm.all_reduce.default": vllm_all_reduce,
    "vllm.all_gather.default": vllm_gather,
    "vllm.reduce_scatter.default": vllm_scatter,
    "_dtensor.shard_dim_alltoall.default": shard_dim_alltoall,
})
