"""9.1 attribute_reads(source): the attribute names the code reads."""
import ast
import re


def _aug(tree):
    return {n.target.attr for n in ast.walk(tree) if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Attribute)}


def w_every_attribute(source):
    return {n.attr for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Attribute)}


def w_no_augassign(source):
    return {n.attr for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)}


def w_top_level_only(source):
    out = set()
    for stmt in ast.parse(source).body:
        value = getattr(stmt, "value", None)
        if isinstance(value, ast.Attribute):
            out.add(value.attr)
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Attribute):
            out.add(stmt.target.attr)
    return out


def w_regex(source):
    return set(re.findall(r"\.\s*([A-Za-z_]\w*)\b(?!\s*=[^=])", source))


class _Outer(ast.NodeVisitor):
    def __init__(self):
        self.names = set()

    def visit_Attribute(self, node):  # no generic_visit: the chain below is never seen
        if isinstance(node.ctx, ast.Load):
            self.names.add(node.attr)

    def visit_AugAssign(self, node):
        if isinstance(node.target, ast.Attribute):
            self.names.add(node.target.attr)
        self.generic_visit(node)


def w_outermost_only(source):
    v = _Outer()
    v.visit(ast.parse(source))
    return v.names


def w_loads_minus_stores(source):
    tree = ast.parse(source)
    loads = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)}
    stores = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)}
    return (loads | _aug(tree)) - (stores - _aug(tree))


def w_list_with_repeats(source):
    tree = ast.parse(source)
    return [n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)] + sorted(_aug(tree))


def w_del_counts(source):
    tree = ast.parse(source)
    return {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, (ast.Load, ast.Del))} | _aug(tree)


def w_plus_names(source):
    tree = ast.parse(source)
    loads = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)}
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return loads | names | _aug(tree)


def w_skips_store_targets(source):
    # ignores everything inside an assignment target (so `b` in `a.b.c = v` is missed)
    tree = ast.parse(source)
    skip = set()
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, (ast.AnnAssign, ast.For)) else []
        for t in targets:
            skip.update(id(x) for x in ast.walk(t))
    return {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load) and id(n) not in skip} | _aug(tree)


WRONG = {
    "every attribute (stores and deletes too)": (w_every_attribute,),
    "forgets augmented assignment": (w_no_augassign,),
    "top-level statements only": (w_top_level_only,),
    "regex over the text": (w_regex,),
    "outermost attribute of a chain only": (w_outermost_only,),
    "loads minus stores": (w_loads_minus_stores,),
    "list with repeats": (w_list_with_repeats,),
    "del counted as a read": (w_del_counts,),
    "plain variable names added": (w_plus_names,),
    "skips whole assignment targets": (w_skips_store_targets,),
}


class _Reads(ast.NodeVisitor):
    def __init__(self):
        self.found = set()

    def visit_Attribute(self, node):
        if isinstance(node.ctx, ast.Load):
            self.found.add(node.attr)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        if isinstance(node.target, ast.Attribute):
            self.found.add(node.target.attr)
        self.generic_visit(node)


def r_visitor(source):
    v = _Reads()
    v.visit(ast.parse(source))
    return v.found


def r_not_store_or_del(source):
    tree = ast.parse(source)
    reads = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and not isinstance(node.ctx, (ast.Store, ast.Del)):
            reads.add(node.attr)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Attribute):
            reads.add(node.target.attr)
    return frozenset(reads)


def r_sorted_list(source):
    tree = ast.parse(source)
    names = {n.attr for n in ast.walk(tree) if type(n) is ast.Attribute and type(n.ctx) is ast.Load}
    names |= {n.target.attr for n in ast.walk(tree) if type(n) is ast.AugAssign and type(n.target) is ast.Attribute}
    return sorted(names)


RIGHT = {"NodeVisitor": (r_visitor,), "not Store/Del, frozenset": (r_not_store_or_del,), "sorted list without repeats": (r_sorted_list,)}
