#!/usr/bin/env python3
"""Every kind in the traces named on the command line is the one ir/src/signature/kinds.rs gives.

usage: kinds-check.py <repo root> <trace.ron>...
"""
import re
import sys

root, traces = sys.argv[1], sys.argv[2:]
src = open(f"{root}/ir/src/signature/kinds.rs").read()
body = src[src.index("variant_names! {"):src.index("/// The outer and inner")]
enums = {m.group(1): m.group(2).split() for m in re.finditer(r"(\w+) \{([^}]*)\}", body)}
inner = {o: "BaseOperationIr" for o in ("BaseFloat", "BaseInt", "BaseBool")}
inner |= {o: "NumericOperationIr" for o in ("NumericFloat", "NumericInt")}
inner |= {"Int": "IntOperationIr", "Float": "FloatOperationIr", "Module": "ModuleOperationIr",
          "Distributed": "DistributedOperationIr", "Activation": "ActivationOperationIr"}


def as_table_gives(kind):
    if "/" in kind:
        outer, name = kind.split("/", 1)
        return outer in inner and name in enums[inner[outer]]
    return kind in ("Init", "Custom", "Drop") or kind in enums["BoolOperationIr"]


kinds, ops = set(), 0
for path in traces:
    found = re.findall(r'kind: "([^"]*)"', open(path).read())
    ops += len(found)
    kinds.update(found)
bad = sorted(k for k in kinds if not as_table_gives(k))
print(f"{len(traces)} traces, {ops} operations, {len(kinds)} kinds; not as the table gives: {bad}")
sys.exit(1 if bad else 0)
