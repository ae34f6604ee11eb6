"""Exercise 9.1: attribute_reads(source), held-out answers."""

import ast
import re


def _loads(tree):
    return {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)}


def _aug(tree):
    return {
        n.target.attr for n in ast.walk(tree) if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Attribute)
    }


# WRONG ---------------------------------------------------------------
def w_no_augassign(source):
    # forgets that cfg.n += 1 reads n
    return _loads(ast.parse(source))


def w_top_level_only(source):
    # looks only at each top-level statement's own expression: nested code is missed
    out = set()
    for stmt in ast.parse(source).body:
        for node in ast.iter_child_nodes(stmt):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                out.add(node.attr)
    return out


def w_regex(source):
    # a text search: strings, comments, stores and 1.e5 all count
    return set(re.findall(r"\.\s*([A-Za-z_]\w*)", source))


def w_every_attribute(source):
    # counts stored and deleted attributes too
    return {n.attr for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Attribute)}


def w_list_with_repeats(source):
    # a list naming an attribute as often as it is read
    tree = ast.parse(source)
    return [n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)] + list(
        _aug(tree)
    )


def w_aug_any_target(source):
    # reads .attr of every augmented target: `x += 1` has a Name target and raises AttributeError
    tree = ast.parse(source)
    return _loads(tree) | {n.target.attr for n in ast.walk(tree) if isinstance(n, ast.AugAssign)}


class _NoRecurse(ast.NodeVisitor):
    def __init__(self):
        self.names = set()

    def visit_Attribute(self, node):
        # no generic_visit: the inner attributes of a chain are never seen
        if isinstance(node.ctx, ast.Load):
            self.names.add(node.attr)


def w_visitor_no_recurse(source):
    # a NodeVisitor that stops at the outer attribute: a.b.c reads b, never seen
    v = _NoRecurse()
    v.visit(ast.parse(source))
    return v.names | _aug(ast.parse(source))


def w_with_names(source):
    # adds plain variable names
    tree = ast.parse(source)
    return (
        _loads(tree)
        | _aug(tree)
        | {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    )


def w_getattr_key(source):
    # adds getattr's second argument even when it is a variable: a computed name is never known
    tree = ast.parse(source)
    extra = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "getattr" and len(n.args) > 1:
            arg = n.args[1]
            extra.add(arg.value if isinstance(arg, ast.Constant) else getattr(arg, "id", ""))
    return _loads(tree) | _aug(tree) | extra


def w_outer_chain_only(source):
    # skips whole chains under a store: `a.b.c = v` does read b
    tree = ast.parse(source)
    stored_inner = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute) and isinstance(n.ctx, (ast.Store, ast.Del)):
            stored_inner |= {id(x) for x in ast.walk(n.value)}
    reads = {
        n.attr
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load) and id(n) not in stored_inner
    }
    return reads | _aug(tree)


# RIGHT ---------------------------------------------------------------
class _Reads(ast.NodeVisitor):
    def __init__(self):
        self.found = set()

    def visit_Attribute(self, node):
        if type(node.ctx) is ast.Load:
            self.found.add(node.attr)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        if isinstance(node.target, ast.Attribute):
            self.found.add(node.target.attr)
        self.generic_visit(node)


def r_visitor(source):
    reader = _Reads()
    reader.visit(ast.parse(source))
    return reader.found


def r_recursive_frozenset(source):
    names = []

    def visit(node):
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Attribute):
            names.append(node.target.attr)
        if isinstance(node, ast.Attribute) and not isinstance(node.ctx, (ast.Store, ast.Del)):
            names.append(node.attr)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(source))
    return frozenset(names)


def r_list_no_repeats_with_getattr(source):
    tree = ast.parse(source)
    ordered = []
    for node in ast.walk(tree):
        name = None
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            name = node.attr
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Attribute):
            name = node.target.attr
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            name = node.args[1].value  # a constant name read by another spelling: allowed either way
        if name is not None and name not in ordered:
            ordered.append(name)
    return ordered


WRONG = {
    "no augmented assignment": (w_no_augassign,),
    "top-level statements only": (w_top_level_only,),
    "regex over the text": (w_regex,),
    "stores and deletes too": (w_every_attribute,),
    "list with repeats": (w_list_with_repeats,),
    "augmented Name target crashes": (w_aug_any_target,),
    "visitor without generic_visit": (w_visitor_no_recurse,),
    "plain names added": (w_with_names,),
    "getattr's variable key": (w_getattr_key,),
    "chains under a store skipped": (w_outer_chain_only,),
}
RIGHT = {
    "NodeVisitor with generic_visit": (r_visitor,),
    "recursive iter_child_nodes, frozenset": (r_recursive_frozenset,),
    "list without repeats, constant getattr/hasattr": (r_list_no_repeats_with_getattr,),
}
UNSURE = {}
